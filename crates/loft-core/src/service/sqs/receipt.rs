//! Receipt handles: an opaque string naming one receive of one message, that only Loft can
//! make.
//!
//! A handle is the URL-safe base64 (no padding) of 41 bytes:
//! `version (1 byte, 2) | queue id (i64 BE) | seq (i64 BE) | token (i64 BE) | MAC (16 bytes)`.
//! The MAC is HMAC-SHA256, truncated to its first 16 bytes, under the store's receipt key
//! ([`crate::store::Store::receipt_key`]: one key per database, so every node sharing it
//! and every restart verify the same handles), over [`MAC_LABEL`] and the 25 bytes before
//! it. A handle whose MAC does not verify is `ReceiptHandleIsInvalid` (SQS API Reference,
//! DeleteMessage and ChangeMessageVisibility, "ReceiptHandleIsInvalid: The specified
//! receipt handle isn't valid"), whatever it names, so no answer to a made-up handle tells
//! whether a message exists.
//!
//! The token changes on every receive, so each receive gives a new handle (SQS Developer
//! Guide, "Queue and message identifiers").
//!
//! Handles Loft issued before the MAC (the base64 of the text `{queue_id}:{seq}:{token}`)
//! still decode, as [`Issued::Legacy`]: nothing vouches for them, so the service accepts
//! one only while its token is the message's current one (until the message is received
//! again), and a legacy token of 0 (the token of a message never received) never.

use base64::Engine;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, ErrorCode, Result};

/// Length of a receipt key, bytes.
pub const KEY_LEN: usize = 32;
/// Length of a handle's MAC, bytes (HMAC-SHA256 truncated: 128 bits).
pub const MAC_LEN: usize = 16;
/// Format version of a handle (its first byte).
pub const VERSION: u8 = 2;
/// What the MAC covers before the handle's fields: names the scheme, so a key used for
/// anything else never yields a handle's MAC.
pub const MAC_LABEL: &[u8] = b"loft sqs receipt handle v2";
/// Length of a handle's bytes before base64: version, three i64 fields, the MAC.
const HANDLE_LEN: usize = 1 + 3 * 8 + MAC_LEN;
/// Longest handle text decoded at all (a real one is 55 characters; a legacy one at most
/// the base64 of three i64s and two colons).
const MAX_HANDLE_CHARS: usize = 128;

/// The secret that signs receipt handles: 32 random bytes kept in the database
/// ([`crate::store::Store::receipt_key`]).
#[derive(Clone, PartialEq, Eq)]
pub struct ReceiptKey([u8; KEY_LEN]);

impl std::fmt::Debug for ReceiptKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptKey(..)")
    }
}

impl ReceiptKey {
    /// The key made of `bytes`.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        ReceiptKey(bytes)
    }

    /// A new random key (the operating system's generator, through `rand`).
    pub fn generate() -> Self {
        ReceiptKey(rand::random())
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
        Some(ReceiptKey(bytes.try_into().ok()?))
    }

    /// HMAC-SHA256 under this key, [`MAC_LABEL`] fed in. The key is given as SHA-256's
    /// 64-byte block, zero-padded, which is how HMAC pads a shorter key (RFC 2104,
    /// section 2), so building it cannot fail.
    fn mac(&self) -> Hmac<Sha256> {
        let mut block = [0u8; 64];
        block[..KEY_LEN].copy_from_slice(&self.0);
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        mac.update(MAC_LABEL);
        mac
    }
}

/// How a decoded handle came to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    /// Its MAC verified: Loft issued it under this database's key.
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
    /// The 25 bytes the MAC covers: version, queue id, seq, token.
    fn fields(&self) -> [u8; 1 + 3 * 8] {
        let mut out = [0u8; 1 + 3 * 8];
        out[0] = VERSION;
        out[1..9].copy_from_slice(&self.queue_id.to_be_bytes());
        out[9..17].copy_from_slice(&self.seq.to_be_bytes());
        out[17..25].copy_from_slice(&self.token.to_be_bytes());
        out
    }

    /// Encodes the handle, signed with `key`.
    pub fn encode(&self, key: &ReceiptKey) -> String {
        let fields = self.fields();
        let mut mac = key.mac();
        mac.update(&fields);
        let tag = mac.finalize().into_bytes();
        let mut bytes = Vec::with_capacity(HANDLE_LEN);
        bytes.extend_from_slice(&fields);
        bytes.extend_from_slice(&tag[..MAC_LEN]);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes a handle: a signed one whose MAC verifies under `key` (compared in constant
    /// time), or a legacy one with a positive token.
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
            let mut mac = key.mac();
            mac.update(&bytes[..HANDLE_LEN - MAC_LEN]);
            mac.verify_truncated_left(&bytes[HANDLE_LEN - MAC_LEN..])
                .map_err(|_| invalid())?;
            let field = |at: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&bytes[at..at + 8]);
                i64::from_be_bytes(b)
            };
            let receipt = Receipt {
                queue_id: field(1),
                seq: field(9),
                token: field(17),
            };
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

    #[test]
    fn a_signed_handle_round_trips_under_its_key_only() {
        let r = receipt();
        let handle = r.encode(&key(1));
        assert_eq!(handle.len(), 55);
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

    #[test]
    fn every_flipped_bit_of_a_signed_handle_is_refused() {
        let k = key(7);
        let good = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(receipt().encode(&k))
            .unwrap();
        for bit in 0..good.len() * 8 {
            let mut bad = good.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let handle = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bad);
            let err = Receipt::decode(&handle, &k).unwrap_err();
            assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid, "bit {bit}");
        }
    }

    #[test]
    fn fields_changed_with_the_old_mac_are_refused() {
        let k = key(9);
        let handle = receipt().encode(&k);
        let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&handle)
            .unwrap();
        // Another seq, the MAC kept: another message of the same queue.
        bytes[16] = bytes[16].wrapping_add(1);
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
        assert!(Receipt::decode(&forged, &k).is_err());
        // A truncated MAC.
        let short = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes[..40]);
        assert!(Receipt::decode(&short, &k).is_err());
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
    fn the_mac_is_hmac_sha256_of_label_and_fields_under_the_key() {
        let k = key(5);
        let handle = receipt().encode(&k);
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&handle)
            .unwrap();
        let mut plain = <Hmac<Sha256> as Mac>::new_from_slice(&[5u8; KEY_LEN]).unwrap();
        plain.update(MAC_LABEL);
        plain.update(&bytes[..25]);
        assert_eq!(&plain.finalize().into_bytes()[..MAC_LEN], &bytes[25..]);
        assert_eq!(bytes[0], VERSION);
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
