//! Receipt handles: an opaque string naming one receive of one message, that only Loft can
//! make and only Loft can read.
//!
//! A handle is the URL-safe base64 (no padding) of 53 bytes:
//! `version (1 byte, 3) | nonce (12 bytes) | sealed fields (24 bytes) | tag (16 bytes)`.
//! The fields are `queue id (i64 BE) | seq (i64 BE) | token (i64 BE)`, sealed with
//! AES-256-GCM (the version byte as associated data) under a key derived from the store's
//! receipt key with HKDF-SHA256 ([`crate::store::Store::receipt_key`]: one key per
//! database, so every node sharing it and every restart read the same handles). The nonce
//! is synthetic: HMAC-SHA256 of [`NONCE_LABEL`] and the fields under the receipt key, cut
//! to 96 bits, so one receive always gives one handle (a FIFO receive replayed for its
//! ReceiveRequestAttemptId returns "the same messages and receipt handles", SQS API
//! Reference, ReceiveMessage) and two receives never share a nonce. So a handle names
//! nothing a caller can read: not the queue's
//! store id, not the message's place in the store's one sequence (which would let one
//! account count another's traffic), not the receive's token. A handle that does not open
//! is `ReceiptHandleIsInvalid` (SQS API Reference, DeleteMessage and
//! ChangeMessageVisibility, "ReceiptHandleIsInvalid: The specified receipt handle isn't
//! valid"), whatever it names, so no answer to a made-up handle tells whether a message
//! exists.
//!
//! The token changes on every receive, so each receive gives a new handle (SQS Developer
//! Guide, "Queue and message identifiers").
//!
//! Handles issued by earlier versions still decode while they are current: version 2 (the
//! same fields in clear, then HMAC-SHA256 of [`MAC_LABEL`] and them, truncated to 16
//! bytes, under the receipt key) as [`Issued::Signed`]; and the format before that (the
//! base64 of the text `{queue_id}:{seq}:{token}`) as [`Issued::Legacy`]: nothing vouches
//! for those, so the service accepts one only while its token is the message's current one
//! (until the message is received again), and a legacy token of 0 (the token of a message
//! never received) never.

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use hkdf::Hkdf;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, ErrorCode, Result};

/// Length of a receipt key, bytes.
pub const KEY_LEN: usize = 32;
/// Length of a handle's MAC, bytes (HMAC-SHA256 truncated: 128 bits).
pub const MAC_LEN: usize = 16;
/// Format version of the handles Loft issues (their first byte): sealed fields.
pub const VERSION: u8 = 3;
/// Format version of the handles issued before [`VERSION`]: fields in clear and a MAC.
pub const SIGNED_VERSION: u8 = 2;
/// What the version 2 MAC covers before the handle's fields: names the scheme, so a key
/// used for anything else never yields a handle's MAC.
pub const MAC_LABEL: &[u8] = b"loft sqs receipt handle v2";
/// HKDF's `info` for the key that seals version 3 handles: the receipt key itself is only
/// ever HMAC's key, and this names the other use.
pub const SEAL_INFO: &[u8] = b"loft sqs receipt handle v3 seal";
/// What the HMAC of a version 3 handle's synthetic nonce covers before its fields.
pub const NONCE_LABEL: &[u8] = b"loft sqs receipt handle v3 nonce";
/// Length of a version 3 handle's nonce, bytes (AES-GCM's 96 bits).
const NONCE_LEN: usize = 12;
/// First byte of a page token ([`ReceiptKey::seal_position`]), and what its seal's
/// additional data starts with, so that no handle ever opens as a token nor a token as a
/// handle.
const POSITION_VERSION: u8 = 0x50;
/// What the HMAC of a page token's synthetic nonce covers before its listing and position.
const POSITION_NONCE_LABEL: &[u8] = b"loft page token nonce";

/// First byte of a name token ([`ReceiptKey::seal_name`]), distinct from handles' and
/// position tokens', and what its seal's additional data starts with.
const NAME_VERSION: u8 = 0x4E;
/// What the HMAC of a name token's synthetic nonce covers before its listing and name.
const NAME_NONCE_LABEL: &[u8] = b"loft name page token nonce";
/// Longest name token text opened at all (a queue's store key is well under 300 bytes).
const MAX_NAME_CHARS: usize = 1024;

/// What [`ReceiptKey::sequence_offset`] feeds HMAC-SHA256 before the queue id.
const SEQUENCE_OFFSET_LABEL: &[u8] = b"loft fifo sequence offset v1";
/// Longest page token text opened at all.
const MAX_POSITION_CHARS: usize = 96;
/// Length of the three i64 fields, bytes.
const FIELDS_LEN: usize = 3 * 8;
/// Length of a version 3 handle's bytes before base64: version, nonce, sealed fields, tag.
const HANDLE_LEN: usize = 1 + NONCE_LEN + FIELDS_LEN + MAC_LEN;
/// Length of a version 2 handle's bytes before base64: version, three i64 fields, the MAC.
const SIGNED_HANDLE_LEN: usize = 1 + FIELDS_LEN + MAC_LEN;
/// Longest handle text decoded at all (a real one is 71 characters; a legacy one at most
/// the base64 of three i64s and two colons).
const MAX_HANDLE_CHARS: usize = 128;

/// The secret that seals receipt handles: 32 random bytes kept in the database
/// ([`crate::store::Store::receipt_key`]), with the AES-256-GCM cipher derived from them
/// ([`SEAL_INFO`]).
#[derive(Clone)]
pub struct ReceiptKey([u8; KEY_LEN], Aes256Gcm);

impl PartialEq for ReceiptKey {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for ReceiptKey {}

impl std::fmt::Debug for ReceiptKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptKey(..)")
    }
}

impl ReceiptKey {
    /// The key made of `bytes`.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        let mut okm = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit (255 x 32), so expand cannot fail.
        let _ = Hkdf::<Sha256>::new(None, &bytes).expand(SEAL_INFO, &mut okm);
        ReceiptKey(bytes, Aes256Gcm::new((&okm).into()))
    }

    /// A new random key (the operating system's generator, through `rand`).
    pub fn generate() -> Self {
        ReceiptKey::from_bytes(rand::random())
    }

    /// The key as base64 text (standard alphabet, padded), as the stores keep it.
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    /// The key `text` holds ([`ReceiptKey::to_base64`]); `None` unless it is base64 of
    /// exactly [`KEY_LEN`] bytes.
    pub fn from_base64(text: &str) -> Option<Self> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok()?;
        Some(ReceiptKey::from_bytes(bytes.try_into().ok()?))
    }

    /// HMAC-SHA256 under this key, [`MAC_LABEL`] fed in. The key is given as SHA-256's
    /// 64-byte block, zero-padded, which is how HMAC pads a shorter key (RFC 2104,
    /// section 2), so building it cannot fail.
    fn mac(&self) -> Hmac<Sha256> {
        self.hmac(MAC_LABEL)
    }

    /// HMAC-SHA256 under this key with `label` fed in. The key is given as SHA-256's
    /// 64-byte block, zero-padded, which is how HMAC pads a shorter key (RFC 2104,
    /// section 2), so building it cannot fail.
    fn hmac(&self, label: &[u8]) -> Hmac<Sha256> {
        let mut block = [0u8; 64];
        block[..KEY_LEN].copy_from_slice(&self.0);
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        mac.update(label);
        mac
    }

    /// Where queue `queue_id`'s FIFO SequenceNumbers start: 40 bits of HMAC-SHA256 under
    /// this key of the queue id, so two queues (and a queue and a topic) seldom give one
    /// number, as AWS's never do, while the offset tells nothing of the queue's id (the
    /// store-wide count of queues). The same on every node and across restarts (the key
    /// is the database's).
    pub fn sequence_offset(&self, queue_id: i64) -> u64 {
        let mut mac = self.hmac(SEQUENCE_OFFSET_LABEL);
        mac.update(&queue_id.to_be_bytes());
        let bytes = mac.finalize().into_bytes();
        let mut high = [0u8; 8];
        high[3..].copy_from_slice(&bytes[..5]);
        u64::from_be_bytes(high)
    }

    /// A NextToken for position `position` (a store sequence) of the listing named
    /// `listing`: base64 (standard alphabet, padded, as AWS's NextTokens are) of a version
    /// byte, a synthetic nonce and the
    /// position sealed with AES-256-GCM under this key, the listing's name as additional
    /// data. The same position gives the same token; a token shows neither the position nor
    /// how far apart two tokens are, so one account cannot count another's rows through the
    /// tokens of a listing whose rows are numbered store-wide.
    pub fn seal_position(&self, listing: &str, position: i64) -> String {
        let fields = position.to_be_bytes();
        self.seal_token(
            POSITION_VERSION,
            POSITION_NONCE_LABEL,
            listing,
            &[&fields],
            &fields,
        )
    }

    /// The position a token of [`ReceiptKey::seal_position`] holds for `listing`; `None`
    /// for any other text (another listing's token, another database's, a made-up one).
    pub fn open_position(&self, listing: &str, token: &str) -> Option<i64> {
        let fields = self.open_token(POSITION_VERSION, MAX_POSITION_CHARS, listing, token)?;
        Some(i64::from_be_bytes(fields.try_into().ok()?))
    }

    /// A NextToken that resumes the listing named `listing` after the item whose key is
    /// `name`: base64 (standard alphabet, padded) of a version byte, a synthetic nonce and
    /// the name sealed with AES-256-GCM under this key, the listing's name as additional
    /// data, as [`ReceiptKey::seal_position`] seals a position. Only Loft can make one, so
    /// a token Loft never gave is told from one it gave ([`ReceiptKey::open_name`]).
    pub fn seal_name(&self, listing: &str, name: &str) -> String {
        let name = name.as_bytes();
        self.seal_token(NAME_VERSION, NAME_NONCE_LABEL, listing, &[&[0], name], name)
    }

    /// The name a token of [`ReceiptKey::seal_name`] holds for `listing`; `None` for any
    /// other text (another listing's token, another database's, a made-up one, the
    /// unsealed base64 names of older versions).
    pub fn open_name(&self, listing: &str, token: &str) -> Option<String> {
        let name = self.open_token(NAME_VERSION, MAX_NAME_CHARS, listing, token)?;
        String::from_utf8(name).ok()
    }

    /// A listing's token: base64 of `version`, a synthetic nonce (the HMAC under
    /// `nonce_label` of `listing` and `nonce_parts`) and `plaintext` sealed with AES-256-GCM,
    /// `version` and `listing` as additional data.
    fn seal_token(
        &self,
        version: u8,
        nonce_label: &[u8],
        listing: &str,
        nonce_parts: &[&[u8]],
        plaintext: &[u8],
    ) -> String {
        let mut mac = self.hmac(nonce_label);
        mac.update(listing.as_bytes());
        for part in nonce_parts {
            mac.update(part);
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&mac.finalize().into_bytes()[..NONCE_LEN]);
        let aad = [&[version][..], listing.as_bytes()].concat();
        let sealed = self
            .1
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            // AES-GCM fails only past its 64 GiB plaintext limit; tokens hold a few bytes.
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        bytes.push(version);
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// What a token of [`ReceiptKey::seal_token`] with `version` holds for `listing`;
    /// `None` for text longer than `max_chars` or not sealed so.
    fn open_token(
        &self,
        version: u8,
        max_chars: usize,
        listing: &str,
        token: &str,
    ) -> Option<Vec<u8>> {
        let text = token.trim();
        if text.len() > max_chars {
            return None;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?;
        if bytes.len() <= 1 + NONCE_LEN || bytes[0] != version {
            return None;
        }
        let aad = [&[version][..], listing.as_bytes()].concat();
        self.1
            .decrypt(
                Nonce::from_slice(&bytes[1..1 + NONCE_LEN]),
                Payload {
                    msg: &bytes[1 + NONCE_LEN..],
                    aad: &aad,
                },
            )
            .ok()
    }

    /// The synthetic nonce of a version 3 handle of `fields`.
    fn nonce(&self, fields: &[u8]) -> [u8; NONCE_LEN] {
        let mut mac = self.hmac(NONCE_LABEL);
        mac.update(fields);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&mac.finalize().into_bytes()[..NONCE_LEN]);
        nonce
    }
}

/// How a decoded handle came to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    /// It opened (version 3) or its MAC verified (version 2): Loft issued it under this
    /// database's key.
    Signed,
    /// A handle of the format before the MAC: only its token, checked against the
    /// message's current one, can vouch for it.
    Legacy,
}

/// The parts of a receipt handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    /// Store id of the queue the message was received from.
    pub queue_id: i64,
    /// The message's store sequence number.
    pub seq: i64,
    /// The receive's token.
    pub token: i64,
}

/// The error for a handle Loft did not issue (or not for this queue), in AWS's words:
/// `ReceiptHandleIsInvalid`, `The input receipt handle "X" is not a valid receipt handle.`
pub fn invalid_handle(handle: &str) -> Error {
    Error::new(
        ErrorCode::ReceiptHandleIsInvalid,
        format!("The input receipt handle \"{handle}\" is not a valid receipt handle."),
    )
}

impl Receipt {
    /// The three fields, big-endian: queue id, seq, token.
    fn fields(&self) -> [u8; FIELDS_LEN] {
        let mut out = [0u8; FIELDS_LEN];
        out[0..8].copy_from_slice(&self.queue_id.to_be_bytes());
        out[8..16].copy_from_slice(&self.seq.to_be_bytes());
        out[16..24].copy_from_slice(&self.token.to_be_bytes());
        out
    }

    /// The receipt of three big-endian fields.
    fn from_fields(bytes: &[u8]) -> Option<Receipt> {
        let field = |at: usize| Some(i64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        Some(Receipt {
            queue_id: field(0)?,
            seq: field(8)?,
            token: field(16)?,
        })
    }

    /// Encodes the handle (version 3), sealed with `key` under its synthetic nonce: the
    /// same receipt always gives the same handle.
    pub fn encode(&self, key: &ReceiptKey) -> String {
        let fields = self.fields();
        let nonce = key.nonce(&fields);
        let sealed = key
            .1
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &fields,
                    aad: &[VERSION],
                },
            )
            // AES-GCM fails only past its 64 GiB plaintext limit; these are 24 bytes.
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(HANDLE_LEN);
        bytes.push(VERSION);
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes a handle: a version 3 one that opens under `key`, a version 2 one whose MAC
    /// verifies under `key` (compared in constant time), or a legacy one with a positive
    /// token.
    ///
    /// Errors: `ReceiptHandleIsInvalid` ([`invalid_handle`]) for anything else.
    pub fn decode(handle: &str, key: &ReceiptKey) -> Result<(Receipt, Issued)> {
        let invalid = || invalid_handle(handle);
        let text = handle.trim();
        if text.len() > MAX_HANDLE_CHARS {
            return Err(invalid());
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| invalid())?;
        if bytes.len() == HANDLE_LEN && bytes[0] == VERSION {
            let fields = key
                .1
                .decrypt(
                    Nonce::from_slice(&bytes[1..1 + NONCE_LEN]),
                    Payload {
                        msg: &bytes[1 + NONCE_LEN..],
                        aad: &[VERSION],
                    },
                )
                .map_err(|_| invalid())?;
            let receipt = Receipt::from_fields(&fields).ok_or_else(invalid)?;
            return Ok((receipt, Issued::Signed));
        }
        if bytes.len() == SIGNED_HANDLE_LEN && bytes[0] == SIGNED_VERSION {
            let mut mac = key.mac();
            mac.update(&bytes[..SIGNED_HANDLE_LEN - MAC_LEN]);
            mac.verify_truncated_left(&bytes[SIGNED_HANDLE_LEN - MAC_LEN..])
                .map_err(|_| invalid())?;
            let receipt = Receipt::from_fields(&bytes[1..1 + FIELDS_LEN]).ok_or_else(invalid)?;
            return Ok((receipt, Issued::Signed));
        }
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let mut parts = text.split(':').map(|p| p.parse::<i64>());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Ok(queue_id)), Some(Ok(seq)), Some(Ok(token)), None) if token > 0 => Ok((
                Receipt {
                    queue_id,
                    seq,
                    token,
                },
                Issued::Legacy,
            )),
            _ => Err(invalid()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_offsets_are_the_keys_and_keep_queues_apart() {
        let key = ReceiptKey::generate();
        let offsets: std::collections::HashSet<u64> =
            (1..=1000).map(|q| key.sequence_offset(q)).collect();
        assert_eq!(offsets.len(), 1000, "a thousand queues, a thousand offsets");
        assert!(offsets.iter().all(|o| *o < 1 << 40));
        // The same key, the same offset (every node, every restart); another key, another.
        let again = ReceiptKey::from_base64(&key.to_base64()).unwrap();
        assert_eq!(again.sequence_offset(7), key.sequence_offset(7));
        assert_ne!(
            ReceiptKey::generate().sequence_offset(7),
            key.sequence_offset(7)
        );
    }

    fn key(b: u8) -> ReceiptKey {
        ReceiptKey::from_bytes([b; KEY_LEN])
    }

    fn receipt() -> Receipt {
        Receipt {
            queue_id: 3,
            seq: 99,
            token: 123456789,
        }
    }

    fn legacy(text: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
    }

    /// A name token opens only for its listing and key; every text Loft did not seal
    /// (one row each) opens as nothing, the unsealed base64 names of older versions too.
    #[test]
    fn a_name_token_opens_only_for_what_sealed_it() {
        let k = key(1);
        let name = "000000000000/us-east-1/queue-b";
        let t = k.seal_name("sqs ListQueues", name);
        assert_eq!(k.open_name("sqs ListQueues", &t).as_deref(), Some(name));
        assert_eq!(
            k.seal_name("sqs ListQueues", name),
            t,
            "same name, same token"
        );
        let mut edited = base64::engine::general_purpose::STANDARD
            .decode(&t)
            .unwrap();
        let last = edited.len() - 1;
        edited[last] ^= 1;
        let edited = base64::engine::general_purpose::STANDARD.encode(edited);
        let plain = base64::engine::general_purpose::STANDARD.encode(name);
        let position = k.seal_position("sqs ListQueues", 7);
        let handle = receipt().encode(&k);
        let long = "A".repeat(2000);
        let rows: [(&str, &ReceiptKey, &str, &str); 9] = [
            ("another listing", &k, "sqs ListDeadLetterSourceQueues", &t),
            ("another key", &key(2), "sqs ListQueues", &t),
            ("one bit changed", &k, "sqs ListQueues", &edited),
            ("the unsealed base64 name", &k, "sqs ListQueues", &plain),
            ("a position token", &k, "sqs ListQueues", &position),
            ("a receipt handle", &k, "sqs ListQueues", &handle),
            ("empty", &k, "sqs ListQueues", ""),
            ("not base64", &k, "sqs ListQueues", "!!"),
            ("too long", &k, "sqs ListQueues", &long),
        ];
        for (what, key, listing, token) in rows {
            assert_eq!(key.open_name(listing, token), None, "{what}");
        }
        assert_eq!(
            k.open_position("sqs ListQueues", &t),
            None,
            "not a position"
        );
    }

    #[test]
    fn a_page_token_opens_only_for_its_listing_and_key_and_shows_no_position() {
        let k = key(1);
        let t104 = k.seal_position("subscriptions", 104);
        assert_eq!(k.open_position("subscriptions", &t104), Some(104));
        assert_eq!(
            k.seal_position("subscriptions", 104),
            t104,
            "same position, same token"
        );
        assert_eq!(
            k.open_position("topics", &t104),
            None,
            "another listing's token"
        );
        assert_eq!(
            key(2).open_position("subscriptions", &t104),
            None,
            "another key"
        );
        assert_eq!(
            Receipt::decode(&t104, &k).ok(),
            None,
            "not a receipt handle"
        );
        let handle = receipt().encode(&k);
        assert_eq!(
            k.open_position("subscriptions", &handle),
            None,
            "not a token"
        );
        for bad in ["", "MDAwMDAwMDAwMDAwMDAwMDAxMDQ", "!!", &"A".repeat(200)] {
            assert_eq!(k.open_position("subscriptions", bad), None, "{bad}");
        }
        // Neighbouring positions give tokens that share nothing but the version byte.
        let t105 = k.seal_position("subscriptions", 105);
        assert!(!t105.contains("104") && !t104.contains("104"));
        assert_ne!(t104[2..10], t105[2..10]);
    }

    /// A version 2 handle, as Loft issued them before handles were sealed: version, the
    /// fields in clear, HMAC-SHA256 of the label and those 25 bytes, truncated.
    fn signed_v2(r: &Receipt, key_byte: u8) -> String {
        let mut bytes = vec![SIGNED_VERSION];
        bytes.extend_from_slice(&r.fields());
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&[key_byte; KEY_LEN]).unwrap();
        mac.update(MAC_LABEL);
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes()[..MAC_LEN]);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn a_handle_round_trips_under_its_key_only() {
        let r = receipt();
        let handle = r.encode(&key(1));
        assert_eq!(handle.len(), 71);
        assert_eq!(
            Receipt::decode(&handle, &key(1)).unwrap(),
            (r, Issued::Signed)
        );
        let err = Receipt::decode(&handle, &key(2)).unwrap_err();
        assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
        assert_eq!(
            err.message,
            format!("The input receipt handle \"{handle}\" is not a valid receipt handle.")
        );
    }

    /// Nothing of the fields shows: no handle holds the queue id, seq or token in clear
    /// (one account could otherwise read the store's sequence and count another account's
    /// messages), and receipts one seq apart share no byte run of a nonce or of sealed
    /// fields. One receipt gives one handle, as a replayed ReceiveRequestAttemptId needs.
    #[test]
    fn a_handle_hides_what_it_names() {
        let k = key(3);
        let r = Receipt {
            queue_id: 0x0102_0304_0506_0708,
            seq: 0x1112_1314_1516_1718,
            token: 0x2122_2324_2526_2728,
        };
        let next = Receipt {
            seq: r.seq + 1,
            ..r
        };
        let a = r.encode(&k);
        assert_eq!(a, r.encode(&k), "one receipt, one handle");
        let b = next.encode(&k);
        let bytes = |h: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(h)
                .unwrap()
        };
        let (ba, bb) = (bytes(&a), bytes(&b));
        assert_ne!(ba[1..13], bb[1..13], "a nonce per receipt");
        assert_ne!(ba[13..37], bb[13..37]);
        for (handle, r) in [(a, r), (b, next)] {
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(&handle)
                .unwrap();
            assert_eq!(bytes[0], VERSION);
            for field in [r.queue_id, r.seq, r.token] {
                let clear = field.to_be_bytes();
                assert!(!bytes.windows(8).any(|w| w == clear), "{handle}");
            }
            assert_eq!(Receipt::decode(&handle, &k).unwrap().0, r);
        }
    }

    #[test]
    fn every_flipped_bit_of_a_handle_is_refused() {
        let k = key(7);
        for good in [receipt().encode(&k), signed_v2(&receipt(), 7)] {
            let good = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(good)
                .unwrap();
            for bit in 0..good.len() * 8 {
                let mut bad = good.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let handle = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bad);
                let err = Receipt::decode(&handle, &k).unwrap_err();
                assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid, "bit {bit}");
            }
        }
    }

    /// Handles issued before sealing still work: a version 2 handle decodes under its key
    /// only, and one with its fields changed under the old MAC, or its MAC cut, does not.
    #[test]
    fn version_2_handles_decode_under_their_mac() {
        let handle = signed_v2(&receipt(), 9);
        assert_eq!(handle.len(), 55);
        assert_eq!(
            Receipt::decode(&handle, &key(9)).unwrap(),
            (receipt(), Issued::Signed)
        );
        assert!(Receipt::decode(&handle, &key(8)).is_err());
        let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&handle)
            .unwrap();
        // Another seq, the MAC kept: another message of the same queue.
        bytes[16] = bytes[16].wrapping_add(1);
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
        assert!(Receipt::decode(&forged, &key(9)).is_err());
        let short = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes[..40]);
        assert!(Receipt::decode(&short, &key(9)).is_err());
    }

    #[test]
    fn legacy_handles_decode_as_legacy_with_a_positive_token_only() {
        let k = key(1);
        assert_eq!(
            Receipt::decode(&legacy("3:99:123456789"), &k).unwrap(),
            (receipt(), Issued::Legacy)
        );
        // Token 0 is a never-received message's: no handle ever carried it.
        assert!(Receipt::decode(&legacy("1:1:0"), &k).is_err());
        assert!(Receipt::decode(&legacy("1:1:-5"), &k).is_err());
        assert!(Receipt::decode(&legacy("1:1"), &k).is_err());
        assert!(Receipt::decode(&legacy("1:1:2:3"), &k).is_err());
    }

    #[test]
    fn garbage_is_invalid() {
        let k = key(1);
        for h in ["garbage!", "", "AAAA", &"A".repeat(500)] {
            assert_eq!(
                Receipt::decode(h, &k).unwrap_err().code,
                ErrorCode::ReceiptHandleIsInvalid
            );
        }
    }

    #[test]
    fn keys_round_trip_as_base64_and_hide_in_debug() {
        let k = ReceiptKey::generate();
        assert_eq!(ReceiptKey::from_base64(&k.to_base64()), Some(k.clone()));
        assert_ne!(k, ReceiptKey::generate());
        assert_eq!(ReceiptKey::from_base64("c2hvcnQ="), None);
        assert_eq!(format!("{k:?}"), "ReceiptKey(..)");
    }
}
