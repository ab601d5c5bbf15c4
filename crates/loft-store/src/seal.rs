//! Server-side encryption at rest of SQS messages, as both engines execute it.
//!
//! The service decides which messages are sealed and under which key
//! ([`loft_core::model::NewMessage::seal`]: the queue's KmsMasterKeyId, or SSE-SQS, and the
//! data key reuse period the send falls in); the engine seals the body and the message
//! attributes before it writes them and opens them when it reads them back. Loft has no
//! KMS: every data key is derived (HKDF-SHA256) from one master key, the queue's store id,
//! the key name and the reuse period, so a queue uses one data key per
//! KmsDataKeyReusePeriodSeconds, as SQS reuses a KMS data key for that period (SQS Developer
//! Guide, "Encryption at rest in Amazon SQS", "Key terms").
//!
//! A sealed value is stored as base64 text of
//! `version (1) | queue id (i64 BE) | period (i64 BE) | key name length (u16 BE) | key name |
//! nonce (12) | AES-256-GCM ciphertext and tag`; the bytes before the nonce, and a byte that
//! tells the body from the attributes, are its associated data. The row's `sealed` column
//! says whether its body and attributes are sealed, so rows written before encryption
//! existed (or with SqsManagedSseEnabled false) read as they are. A moved message (a
//! dead-letter move, a move task) keeps its sealed bytes: the header names the key that
//! opens them, whichever queue it is in now.
//!
//! The master key: 32 random bytes, base64 on one line, in a file Loft makes at its first
//! start (mode 0600, in a folder of mode 0700; see [`MasterKey::load_or_create`]). Losing it
//! loses every sealed message; nodes sharing a PostgreSQL database must share it. The
//! database keeps the key's check value ([`MasterKey::check_value`]), and a start whose key
//! is not the one its sealed messages need is refused ([`verify_master_key`]). A receive
//! that still meets a message it cannot open passes it over untouched ([`Claiming`]).
//!
//! How the engines use it: what a store method writes goes through [`Sealer::sealed`]
//! (the [`Seal`] of its type says what is sealed: message bodies and attributes, recorded
//! messages and subjects, delivery bodies, archived publishes), and what it reads back
//! through [`Sealer::opened`] ([`Open`]: each type's rule for a value that cannot be
//! opened), a receive's claims too, inside its transaction ([`Claiming`]). Each engine
//! calls each of the two at one place; the per-type rules are written here only.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hkdf::Hkdf;
use loft_core::error::{Error, Result};
use loft_core::model::{
    ArchiveEntry, ArchivedMessage, DeliveryRecord, FifoPublish, FifoPublishEntry, NewDelivery,
    NewMessage, ReceiveOutcome, RecordedMessage, ReplayStep, SealWith, StoredMessage, TopicSeal,
};
use rand::RngCore;
use sha2::Sha256;

/// Length of the master key and of every data key, bytes (AES-256).
pub const KEY_LEN: usize = 32;
/// Format version of a sealed value (its first byte).
pub const VERSION: u8 = 1;
/// Format version of a sealed value of a topic's data (SNS KmsMasterKeyId): the same
/// layout, the id being the topic's and the data key derived under [`TOPIC_SALT`].
pub const TOPIC_VERSION: u8 = 2;
/// Length of the random nonce of each sealed value, bytes (GCM's 96 bits).
pub const NONCE_LEN: usize = 12;
/// HKDF salt of the data keys: names the scheme, so a change of it is a new version.
const SALT: &[u8] = b"loft sqs sse v1";
/// HKDF salt of the data keys of topics' data (SNS KmsMasterKeyId).
const TOPIC_SALT: &[u8] = b"loft sns sse v1";
/// What a recorded message that cannot be decrypted shows instead of its text.
pub const UNREADABLE_RECORD: &str = "(encrypted at rest; cannot be decrypted with this master key)";
/// Associated-data byte of a sealed recorded message (email, SMS, ...).
pub const RECORDED: u8 = b'R';
/// Associated-data byte of a sealed recorded message's subject.
pub const RECORDED_SUBJECT: u8 = b'S';
/// Associated-data byte of a sealed pending delivery's body (HTTP/S, Lambda).
pub const DELIVERY: u8 = b'D';
/// Associated-data byte of a sealed FIFO topic archive entry.
pub const ARCHIVE: u8 = b'F';
/// HKDF salt of the master key's check value ([`MasterKey::check_value`]).
const CHECK_SALT: &[u8] = b"loft master key check v1";
/// Associated-data byte of a sealed body.
const BODY: u8 = b'B';
/// Associated-data byte of sealed message attributes.
const ATTRIBUTES: u8 = b'A';
/// Data keys kept derived (one per queue and reuse period in use); the cache is emptied
/// when it grows past this.
const CACHE_LIMIT: usize = 4096;
/// Unreadable messages remembered as already reported ([`Sealer::pass_over`]).
const UNREADABLE_LIMIT: usize = 65536;

/// The master key every data key is derived from. `Debug` never shows it.
#[derive(Clone)]
pub struct MasterKey([u8; KEY_LEN]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    /// A key of these bytes (tests, or a key kept elsewhere).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        MasterKey(bytes)
    }

    /// A new random key (the system's CSPRNG).
    pub fn generate() -> Self {
        let mut bytes = [0u8; KEY_LEN];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        MasterKey(bytes)
    }

    /// Reads the key file at `path` (base64 of 32 bytes, surrounding whitespace ignored),
    /// or, when there is none, makes a new key and writes it there: the folder is created
    /// with mode 0700, the file with mode 0600, atomically (written aside, then linked into
    /// place, so two processes starting together end with one key).
    ///
    /// Errors: the file cannot be read or written, or does not hold a 32-byte key.
    pub fn load_or_create(path: &Path) -> std::result::Result<Self, String> {
        match fs::read_to_string(path) {
            Ok(text) => return Self::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        loft_core::private_dir::create_private_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let key = Self::generate();
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("key"),
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            let mut options = fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut f = options.open(&tmp)?;
            f.write_all(format!("{}\n", BASE64.encode(key.0)).as_bytes())?;
            f.sync_all()
        };
        write().map_err(|e| format!("{}: {e}", tmp.display()))?;
        let linked = fs::hard_link(&tmp, path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(key),
            // Another process made it first: use that one.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text =
                    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
                Self::parse(path, &text)
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The key's check value: base64 of 32 bytes derived from it (HKDF-SHA256 under a
    /// fixed label of its own, so it reveals nothing of the data keys). The database keeps
    /// the check value of the key that seals its messages, so a start with another key is
    /// refused ([`verify_master_key`]) instead of failing on every sealed message.
    pub fn check_value(&self) -> String {
        let mut okm = [0u8; KEY_LEN];
        // 32 bytes are always within HKDF-SHA256's output limit.
        let _ = Hkdf::<Sha256>::new(Some(CHECK_SALT), &self.0).expand(b"key check", &mut okm);
        BASE64.encode(okm)
    }

    /// The key as its file holds it: base64 of the 32 bytes.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.0)
    }

    /// A key from [`MasterKey::to_base64`]'s text (surrounding whitespace ignored), or
    /// `None` when it is not base64 of 32 bytes.
    pub fn from_base64(text: &str) -> Option<Self> {
        BASE64
            .decode(text.trim())
            .ok()
            .and_then(|b| <[u8; KEY_LEN]>::try_from(b).ok())
            .map(MasterKey)
    }

    fn parse(path: &Path, text: &str) -> std::result::Result<Self, String> {
        let bytes = BASE64
            .decode(text.trim())
            .ok()
            .and_then(|b| <[u8; KEY_LEN]>::try_from(b).ok())
            .ok_or_else(|| {
                format!(
                    "{}: not a Loft master key (base64 of {KEY_LEN} bytes on one line)",
                    path.display()
                )
            })?;
        Ok(MasterKey(bytes))
    }
}

/// Where Loft keeps the master key by default: `loft-sse/master.key` in the folder of the
/// SQLite database `db` (beside `loft-sns-signing/`).
pub fn default_key_file(db: &Path) -> PathBuf {
    db.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("loft-sse")
        .join("master.key")
}

/// Warnings about a key file whose folder or file others may read (mode wider than 0700
/// or 0600); empty when they are private or do not exist yet.
pub fn permission_warnings(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
        for (p, want) in [(dir, 0o700), (Some(path), 0o600)] {
            let Some(p) = p else { continue };
            if let Ok(m) = fs::metadata(p) {
                let mode = m.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    out.push(format!(
                        "{} has mode {mode:o}; others may read the SQS encryption master key (want {want:o})",
                        p.display()
                    ));
                }
            }
        }
    }
    out
}

/// What a database says, at start, about the master key its sealed rows need (each
/// engine's `master_key_probe`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyProbe {
    /// The check value recorded for the database's master key
    /// ([`MasterKey::check_value`]); `None` in a database made before Loft recorded one.
    pub check: Option<String>,
    /// The sealed body of one stored message, when any message is sealed.
    pub sealed_body: Option<String>,
}

/// Whether `key` (named by `origin` in the error, e.g. `the key file /x/master.key`) may
/// serve the database `probe` describes. `Ok(true)`: start, and record the key's check
/// value (there is none yet, or nothing sealed is stored and the key simply becomes the
/// database's); `Ok(false)`: start, the recorded check value is this key's.
///
/// Errors: the database holds sealed messages and the key is not theirs: its check value
/// differs from the recorded one, or, with none recorded, it does not open a stored
/// sealed body. The message names `origin`.
pub fn verify_master_key(
    key: &MasterKey,
    origin: &str,
    probe: &KeyProbe,
) -> std::result::Result<bool, String> {
    let mine = key.check_value();
    let refuse = || {
        Err(format!(
            "{origin} does not open this database's encrypted messages (it is not the master \
             key that sealed them); start with that key, or move the database aside"
        ))
    };
    match (&probe.check, &probe.sealed_body) {
        (Some(c), _) if *c == mine => Ok(false),
        (_, None) => Ok(true),
        (Some(_), Some(_)) => refuse(),
        (None, Some(body)) => {
            let sealer = Sealer::new(KeySource::Key(key.clone()));
            if sealer.open(BODY, body).is_ok() {
                Ok(true)
            } else {
                refuse()
            }
        }
    }
}

/// Derived data keys by (format version, queue or topic id, period), each with the key
/// name it was derived for.
type CipherCache = HashMap<(u8, i64, i64), (String, Arc<Aes256Gcm>)>;

/// Where a [`Sealer`] finds its master key.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// The key file, read (or made) on the first seal or open.
    File(PathBuf),
    /// This key.
    Key(MasterKey),
    /// None: sealing and opening fail with `InternalError` (a store opened without a key).
    Missing,
}

/// Seals and opens message bodies and attributes for one store. Cheap to share.
pub struct Sealer {
    source: KeySource,
    master: OnceLock<MasterKey>,
    loading: Mutex<()>,
    /// Derived data keys by (queue id, period), with their key name.
    ciphers: Mutex<CipherCache>,
    /// Messages (queue id, seq) receives found unreadable, reported once each.
    unreadable: Mutex<HashSet<(i64, i64)>>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer whose master key comes from `source`.
    pub fn new(source: KeySource) -> Self {
        Sealer {
            source,
            master: OnceLock::new(),
            loading: Mutex::new(()),
            ciphers: Mutex::new(HashMap::new()),
            unreadable: Mutex::new(HashSet::new()),
        }
    }

    /// A sealer with a new random key that lives as long as the process (in-memory
    /// databases, whose messages do not outlive it either).
    pub fn ephemeral() -> Self {
        Self::new(KeySource::Key(MasterKey::generate()))
    }

    fn master(&self) -> Result<&MasterKey> {
        if let Some(k) = self.master.get() {
            return Ok(k);
        }
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = self.master.get() {
            return Ok(k);
        }
        let key = match &self.source {
            KeySource::Key(k) => k.clone(),
            KeySource::File(path) => MasterKey::load_or_create(path).map_err(|e| {
                tracing::error!(error = %e, "the SQS encryption master key cannot be loaded");
                Error::internal(format!("the encryption master key cannot be loaded: {e}"))
            })?,
            KeySource::Missing => {
                return Err(Error::internal(
                    "this store has no encryption master key; messages of encrypted queues cannot be stored",
                ))
            }
        };
        Ok(self.master.get_or_init(|| key))
    }

    /// The data key of format `version` (its HKDF salt: [`SALT`] for queues,
    /// [`TOPIC_SALT`] for topics) for (`id`, `period`, `key_id`).
    fn cipher_of(
        &self,
        version: u8,
        queue_id: i64,
        period: i64,
        key_id: &str,
    ) -> Result<Arc<Aes256Gcm>> {
        {
            let cache = self.ciphers.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((k, c)) = cache.get(&(version, queue_id, period)) {
                if k == key_id {
                    return Ok(c.clone());
                }
            }
        }
        let master = self.master()?;
        let mut info = Vec::with_capacity(16 + key_id.len());
        info.extend_from_slice(&queue_id.to_be_bytes());
        info.extend_from_slice(&period.to_be_bytes());
        info.extend_from_slice(key_id.as_bytes());
        let mut okm = [0u8; KEY_LEN];
        let salt = if version == TOPIC_VERSION {
            TOPIC_SALT
        } else {
            SALT
        };
        Hkdf::<Sha256>::new(Some(salt), &master.0)
            .expand(&info, &mut okm)
            .map_err(|_| Error::internal("data key derivation failed"))?;
        let cipher = Arc::new(Aes256Gcm::new((&okm).into()));
        let mut cache = self.ciphers.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(
            (version, queue_id, period),
            (key_id.to_owned(), cipher.clone()),
        );
        Ok(cipher)
    }

    /// Seals `plain` for queue `queue_id` under `with`; `domain` tells a body from
    /// attributes. Returns the base64 text the column keeps.
    ///
    /// Errors: `InternalError` when the master key is missing or cannot be loaded, or the
    /// key name is longer than 65535 bytes.
    fn seal(&self, queue_id: i64, with: &SealWith, domain: u8, plain: &[u8]) -> Result<String> {
        self.seal_as(VERSION, queue_id, with, domain, plain)
    }

    /// [`Sealer::seal`] in format `version` ([`VERSION`] for a queue's messages,
    /// [`TOPIC_VERSION`] for a topic's data, `queue_id` then being the topic's id).
    fn seal_as(
        &self,
        version: u8,
        queue_id: i64,
        with: &SealWith,
        domain: u8,
        plain: &[u8],
    ) -> Result<String> {
        let key = with.key_id.as_bytes();
        let key_len = u16::try_from(key.len())
            .map_err(|_| Error::internal("encryption key name too long"))?;
        let cipher = self.cipher_of(version, queue_id, with.period, &with.key_id)?;
        let mut out = Vec::with_capacity(19 + key.len() + NONCE_LEN + plain.len() + 16);
        out.push(version);
        out.extend_from_slice(&queue_id.to_be_bytes());
        out.extend_from_slice(&with.period.to_be_bytes());
        out.extend_from_slice(&key_len.to_be_bytes());
        out.extend_from_slice(key);
        let mut nonce = [0u8; NONCE_LEN];
        rand::thread_rng().fill_bytes(&mut nonce);
        let mut aad = out.clone();
        aad.push(domain);
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: &aad,
                },
            )
            .map_err(|_| Error::internal("encryption failed"))?;
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(BASE64.encode(out))
    }

    /// Opens what [`Sealer::seal`] made with the same `domain`.
    ///
    /// Errors: `InternalError` when the text is not a sealed value of a known version, the
    /// master key is missing, or authentication fails (another master key, or changed
    /// bytes).
    fn open(&self, domain: u8, text: &str) -> Result<Vec<u8>> {
        let bad = || {
            Error::internal(
                "a stored message cannot be decrypted (not sealed by this master key, or damaged)",
            )
        };
        let bytes = BASE64.decode(text).map_err(|_| bad())?;
        if bytes.len() < 19 || (bytes[0] != VERSION && bytes[0] != TOPIC_VERSION) {
            return Err(bad());
        }
        let version = bytes[0];
        let queue_id = i64::from_be_bytes(bytes[1..9].try_into().map_err(|_| bad())?);
        let period = i64::from_be_bytes(bytes[9..17].try_into().map_err(|_| bad())?);
        let key_len = u16::from_be_bytes([bytes[17], bytes[18]]) as usize;
        let header_len = 19 + key_len;
        if bytes.len() < header_len + NONCE_LEN + 16 {
            return Err(bad());
        }
        let key_id = std::str::from_utf8(&bytes[19..header_len]).map_err(|_| bad())?;
        let cipher = self.cipher_of(version, queue_id, period, key_id)?;
        let mut aad = bytes[..header_len].to_vec();
        aad.push(domain);
        let nonce = Nonce::from_slice(&bytes[header_len..header_len + NONCE_LEN]);
        cipher
            .decrypt(
                nonce,
                Payload {
                    msg: &bytes[header_len + NONCE_LEN..],
                    aad: &aad,
                },
            )
            .map_err(|_| bad())
    }

    /// Seals the body and attributes of `m`, bound for queue `queue_id`, when the service
    /// asked for it ([`NewMessage::seal`]); the message is then stored with its `sealed`
    /// flag set. Nothing changes when it did not.
    ///
    /// Errors: as [`Sealer::seal`].
    fn seal_message(&self, queue_id: i64, m: &mut NewMessage) -> Result<()> {
        let Some(with) = &m.seal else {
            return Ok(());
        };
        m.body = self.seal(queue_id, with, BODY, m.body.as_bytes())?;
        if let Some(a) = &m.message_attributes {
            m.message_attributes = Some(self.seal(queue_id, with, ATTRIBUTES, a.as_bytes())?);
        }
        Ok(())
    }

    /// Seals every message of a batch, each for its queue.
    fn seal_messages(&self, messages: &mut [(i64, NewMessage)]) -> Result<()> {
        for (queue_id, m) in messages {
            self.seal_message(*queue_id, m)?;
        }
        Ok(())
    }

    /// Opens the body and attributes of a message read back with its `sealed` flag set,
    /// and clears the flag; nothing changes for a message stored as it was.
    ///
    /// Errors: as [`Sealer::open`]; logged with the message's sequence number.
    fn open_message(&self, m: &mut StoredMessage) -> Result<()> {
        if !m.sealed {
            return Ok(());
        }
        let text = |bytes: Vec<u8>| {
            String::from_utf8(bytes)
                .map_err(|_| Error::internal("a decrypted message is not UTF-8"))
        };
        let opened = self.open(BODY, &m.body).and_then(text).and_then(|body| {
            let attributes = match &m.message_attributes {
                Some(a) => Some(self.open(ATTRIBUTES, a).and_then(text)?),
                None => None,
            };
            Ok((body, attributes))
        });
        match opened {
            Ok((body, attributes)) => {
                m.body = body;
                m.message_attributes = attributes;
                m.sealed = false;
                Ok(())
            }
            Err(e) => {
                tracing::error!(seq = m.seq, queue_id = m.queue_id, error = %e.message, "stored message cannot be decrypted");
                Err(e)
            }
        }
    }

    /// Opens every message of a list.
    fn open_messages(&self, messages: &mut [StoredMessage]) -> Result<()> {
        messages.iter_mut().try_for_each(|m| self.open_message(m))
    }

    /// Seals `plain`, a piece of topic data of kind `domain` ([`RECORDED`],
    /// [`RECORDED_SUBJECT`], [`DELIVERY`], [`ARCHIVE`]), under the topic's data key
    /// ([`TopicSeal`]: derived from the master key, the topic's id and its
    /// KmsMasterKeyId). Returns the base64 text the column keeps.
    ///
    /// Errors: `InternalError` when the master key is missing or cannot be loaded.
    fn seal_topic(&self, with: &TopicSeal, domain: u8, plain: &str) -> Result<String> {
        let key = SealWith {
            key_id: with.key_id.clone(),
            period: 0,
        };
        self.seal_as(TOPIC_VERSION, with.topic_id, &key, domain, plain.as_bytes())
    }

    /// Opens what [`Sealer::seal_topic`] sealed as `domain`.
    ///
    /// Errors: `InternalError` when it was sealed under another master key, is damaged, or
    /// is not text; logged.
    fn open_topic(&self, domain: u8, text: &str) -> Result<String> {
        self.open(domain, text)
            .and_then(|b| {
                String::from_utf8(b)
                    .map_err(|_| Error::internal("decrypted topic data is not UTF-8"))
            })
            .inspect_err(|e| {
                tracing::error!(error = %e.message, "stored topic data cannot be decrypted");
            })
    }

    /// Seals the message and subject of every record whose topic asked for it
    /// ([`RecordedMessage::seal`]); the record is then stored with its `sealed` flag set.
    ///
    /// Errors: as [`Sealer::seal_topic`].
    fn seal_records(&self, records: &mut [RecordedMessage]) -> Result<()> {
        for r in records {
            let Some(with) = &r.seal else { continue };
            r.message = self.seal_topic(with, RECORDED, &r.message)?;
            if let Some(subject) = &r.subject {
                r.subject = Some(self.seal_topic(with, RECORDED_SUBJECT, subject)?);
            }
        }
        Ok(())
    }

    /// Seals the body of every delivery whose topic asked for it ([`NewDelivery::seal`]);
    /// it is then stored with its `sealed` flag set.
    ///
    /// Errors: as [`Sealer::seal_topic`].
    fn seal_deliveries(&self, deliveries: &mut [NewDelivery]) -> Result<()> {
        for d in deliveries {
            if let Some(with) = &d.seal {
                d.body = self.seal_topic(with, DELIVERY, &d.body)?;
            }
        }
        Ok(())
    }

    /// Opens the bodies of deliveries read back with their `sealed` flag set. One that
    /// cannot be opened (another master key, damaged) is left out of the list and logged
    /// with its id: it is never sent as ciphertext, and its row stays (a claimed one is
    /// met again when its lease ends).
    fn open_deliveries(&self, deliveries: &mut Vec<DeliveryRecord>) {
        deliveries.retain_mut(|d| {
            if !d.sealed {
                return true;
            }
            match self.open_topic(DELIVERY, &d.body) {
                Ok(body) => {
                    d.body = body;
                    d.sealed = false;
                    true
                }
                Err(_) => {
                    tracing::error!(
                        delivery = d.id,
                        subscription = %d.subscription,
                        "a pending SNS delivery cannot be decrypted with this master key; not sent"
                    );
                    false
                }
            }
        });
    }

    /// Seals the publish a FIFO topic's archive keeps of `a` when its topic asked for it
    /// ([`ArchiveEntry::seal`]); it is then stored with its `sealed` flag set.
    ///
    /// Errors: as [`Sealer::seal_topic`].
    fn seal_archive(&self, a: &mut ArchiveEntry) -> Result<()> {
        if let Some(with) = &a.seal {
            a.published = self.seal_topic(with, ARCHIVE, &a.published)?;
        }
        Ok(())
    }

    /// Opens archived messages read back with their `sealed` flag set.
    ///
    /// Errors: as [`Sealer::open_topic`] (a replay that meets one then fails, the archive
    /// row stays as it was).
    fn open_archived(&self, messages: &mut [ArchivedMessage]) -> Result<()> {
        for m in messages.iter_mut().filter(|m| m.sealed) {
            m.published = self.open_topic(ARCHIVE, &m.published)?;
            m.sealed = false;
        }
        Ok(())
    }

    /// Opens a record read back with its `sealed` flag set. One that cannot be opened
    /// (another master key, damaged) is shown with [`UNREADABLE_RECORD`] as its message
    /// and no subject, and logged; the stored row is not changed.
    fn open_record(&self, r: &mut RecordedMessage, sealed: bool) {
        if !sealed {
            return;
        }
        match self.open_topic(RECORDED, &r.message) {
            Ok(m) => r.message = m,
            Err(_) => {
                r.message = UNREADABLE_RECORD.to_owned();
                r.subject = None;
                return;
            }
        }
        if let Some(subject) = &r.subject {
            r.subject = self.open_topic(RECORDED_SUBJECT, subject).ok();
        }
    }

    /// Opens `m` for a receive that has not claimed it yet: `true` when it is readable
    /// (opened, or never sealed), `false` when it cannot be opened (sealed under another
    /// master key, damaged, or no key can be loaded), in which case `m` is left as it was
    /// and the receive must pass it over. Logs nothing; see [`Sealer::pass_over`].
    fn open_for_receive(&self, m: &mut StoredMessage) -> bool {
        if !m.sealed {
            return true;
        }
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).ok();
        let Some(body) = self.open(BODY, &m.body).ok().and_then(text) else {
            return false;
        };
        let attributes = match &m.message_attributes {
            Some(a) => match self.open(ATTRIBUTES, a).ok().and_then(text) {
                Some(a) => Some(a),
                None => return false,
            },
            None => None,
        };
        m.body = body;
        m.message_attributes = attributes;
        m.sealed = false;
        true
    }

    /// Records that a receive passed over `m` (it cannot be opened) in `undecryptable`
    /// ([`ReceiveOutcome::undecryptable`]), the first time this sealer meets it only (a
    /// bounded memory of (queue, seq); forgotten past 65536 messages).
    fn pass_over(&self, m: &StoredMessage, undecryptable: &mut Vec<String>) {
        let mut seen = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= UNREADABLE_LIMIT {
            seen.clear();
        }
        if seen.insert((m.queue_id, m.seq)) {
            undecryptable.push(
                m.message_id
                    .clone()
                    .unwrap_or_else(|| format!("seq {}", m.seq)),
            );
        }
    }
}

impl Sealer {
    /// The one way an engine seals: `plain`, what a store method writes, with everything
    /// the service asked to seal sealed ([`Seal`]). The engine writes what comes back.
    ///
    /// Errors: `InternalError` when the master key is missing or cannot be loaded, or a
    /// key name is longer than 65535 bytes; nothing is written then.
    pub fn sealed<T: Seal>(self: &Arc<Self>, plain: T) -> Result<T::Sealed> {
        plain.seal_with(self)
    }

    /// The one way an engine opens what it read back: `stored` with every sealed value
    /// opened, each type keeping its own rule for a value that cannot be opened
    /// ([`Open`]). What a store method hands out is opened after its transaction; a
    /// message a receive claims, inside it ([`Claiming`]).
    ///
    /// Errors: as the type's [`Open`] says.
    pub fn opened<T: Open>(&self, stored: T) -> Result<T::Opened> {
        stored.open_with(self)
    }

    /// A message a receive claims, inside the receive's transaction, as read:
    /// [`Claimed::Readable`] opened (or never sealed), or [`Claimed::Unreadable`] as read
    /// when it cannot be opened (sealed under another master key, damaged, or no key can
    /// be loaded). The receive must then leave it unclaimed; it is named in
    /// `undecryptable` ([`ReceiveOutcome::undecryptable`]) the first time this sealer
    /// meets it. Engines reach it through [`Sealer::opened`] ([`Claiming`]).
    fn open_claimed(&self, mut m: StoredMessage, undecryptable: &mut Vec<String>) -> Claimed {
        if self.open_for_receive(&mut m) {
            Claimed::Readable(m)
        } else {
            self.pass_over(&m, undecryptable);
            Claimed::Unreadable(m)
        }
    }
}

/// A message a receive is claiming, as read inside the receive's transaction, for
/// [`Sealer::opened`]: the receive hands it out only when it comes back
/// [`Claimed::Readable`], so a message never leaves a receive sealed.
#[derive(Debug)]
pub struct Claiming<'a> {
    /// The message as read.
    pub message: StoredMessage,
    /// The receive's [`ReceiveOutcome::undecryptable`]: the message is named there the
    /// first time a receive cannot open it.
    pub undecryptable: &'a mut Vec<String>,
}

/// What [`Sealer::opened`] made of a message a receive claims ([`Claiming`]).
#[derive(Debug)]
pub enum Claimed {
    /// Opened, or never sealed: the receive hands it out.
    Readable(StoredMessage),
    /// It cannot be opened; as read: the receive leaves it unclaimed.
    Unreadable(StoredMessage),
}

/// What a store method writes, as [`Sealer::sealed`] seals it: every value whose `seal`
/// the service set (a message's [`NewMessage::seal`], a record's, a delivery's, an archive
/// entry's) sealed under the key it names, the others as they are. Sealed values keep
/// their `seal`, so the engine stores them with their `sealed` flag set.
pub trait Seal {
    /// What the engine writes.
    type Sealed;

    /// Seals what needs it with `sealer`.
    ///
    /// Errors: as [`Sealer::sealed`].
    fn seal_with(self, sealer: &Arc<Sealer>) -> Result<Self::Sealed>;
}

/// Messages bound for queues (SendMessage, SendMessageBatch, a standard topic's fan-out).
impl Seal for Vec<(i64, NewMessage)> {
    type Sealed = Self;

    fn seal_with(mut self, sealer: &Arc<Sealer>) -> Result<Self> {
        sealer.seal_messages(&mut self)?;
        Ok(self)
    }
}

/// A replay step's queue messages.
impl Seal for ReplayStep {
    type Sealed = Self;

    fn seal_with(mut self, sealer: &Arc<Sealer>) -> Result<Self> {
        sealer.seal_messages(&mut self.messages)?;
        Ok(self)
    }
}

/// A standard topic's publish: (queue messages, pending deliveries, recorded messages).
impl Seal
    for (
        Vec<(i64, NewMessage)>,
        Vec<NewDelivery>,
        Vec<RecordedMessage>,
    )
{
    type Sealed = Self;

    fn seal_with(self, sealer: &Arc<Sealer>) -> Result<Self> {
        let (mut messages, mut deliveries, mut records) = self;
        sealer.seal_messages(&mut messages)?;
        sealer.seal_deliveries(&mut deliveries)?;
        sealer.seal_records(&mut records)?;
        Ok((messages, deliveries, records))
    }
}

/// A FIFO topic's publish: its archive entries sealed now, its fan-out's messages as
/// [`SealedFifoPublish::fanout`] builds them (the store numbers the entries first).
impl Seal for FifoPublish {
    type Sealed = SealedFifoPublish;

    fn seal_with(mut self, sealer: &Arc<Sealer>) -> Result<SealedFifoPublish> {
        for a in self.entries.iter_mut().filter_map(|e| e.archive.as_mut()) {
            sealer.seal_archive(a)?;
        }
        Ok(SealedFifoPublish {
            publish: self,
            sealer: sealer.clone(),
        })
    }
}

/// A [`FifoPublish`] as an engine executes it: its archive entries sealed, and its
/// fan-out reachable only through [`SealedFifoPublish::fanout`], which seals what it
/// builds.
pub struct SealedFifoPublish {
    publish: FifoPublish,
    sealer: Arc<Sealer>,
}

impl SealedFifoPublish {
    /// The topic's store id.
    pub fn topic_id(&self) -> i64 {
        self.publish.topic_id
    }

    /// The publish's time (ms).
    pub fn now_ms(&self) -> i64 {
        self.publish.now_ms
    }

    /// The entries, in order; an archive entry's `published` is sealed when its `seal`
    /// is set.
    pub fn entries(&self) -> &[FifoPublishEntry] {
        &self.publish.entries
    }

    /// The queue messages of entry `index` numbered `sequence`
    /// ([`loft_core::model::FifoFanout`]), sealed as [`Seal`] says.
    ///
    /// Errors: as [`Sealer::sealed`].
    pub fn fanout(&self, index: usize, sequence: i64) -> Result<Vec<(i64, NewMessage)>> {
        let mut built = (self.publish.fanout)(index, sequence);
        self.sealer.seal_messages(&mut built)?;
        Ok(built)
    }
}

impl std::fmt::Debug for SealedFifoPublish {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedFifoPublish")
            .field("publish", &self.publish)
            .finish_non_exhaustive()
    }
}

/// What a store method read back, as [`Sealer::opened`] opens it: each sealed value
/// opened, with its type's rule for one that cannot be opened.
pub trait Open {
    /// What the store method returns.
    type Opened;

    /// Opens what was sealed with `sealer`.
    ///
    /// Errors: as each type says.
    fn open_with(self, sealer: &Sealer) -> Result<Self::Opened>;
}

/// Messages read back (peek). Errors: `InternalError` when one cannot be opened; logged.
impl Open for Vec<StoredMessage> {
    type Opened = Self;

    fn open_with(mut self, sealer: &Sealer) -> Result<Self> {
        sealer.open_messages(&mut self)?;
        Ok(self)
    }
}

/// A receive's outcome after its transaction: its messages opened (a FIFO receive
/// attempt's replay hands out what it claimed before, read back sealed). Errors: as
/// `Vec<StoredMessage>`'s.
impl Open for ReceiveOutcome {
    type Opened = Self;

    fn open_with(mut self, sealer: &Sealer) -> Result<Self> {
        sealer.open_messages(&mut self.messages)?;
        Ok(self)
    }
}

/// A message a receive claims, inside the receive's transaction: opened, or passed over
/// when it cannot be opened ([`Claimed`]; the rule of `Sealer::open_claimed`). Never
/// fails.
impl Open for Claiming<'_> {
    type Opened = Claimed;

    fn open_with(self, sealer: &Sealer) -> Result<Claimed> {
        Ok(sealer.open_claimed(self.message, self.undecryptable))
    }
}

/// Pending deliveries: one that cannot be opened is left out and logged (never sent as
/// ciphertext; its row stays).
impl Open for Vec<DeliveryRecord> {
    type Opened = Self;

    fn open_with(mut self, sealer: &Sealer) -> Result<Self> {
        sealer.open_deliveries(&mut self);
        Ok(self)
    }
}

/// A FIFO topic's archived messages. Errors: `InternalError` when one cannot be opened
/// (the replay that meets it fails; the archive stays as it was).
impl Open for Vec<ArchivedMessage> {
    type Opened = Self;

    fn open_with(mut self, sealer: &Sealer) -> Result<Self> {
        sealer.open_archived(&mut self)?;
        Ok(self)
    }
}

/// Recorded messages with their `sealed` flags: one that cannot be opened shows
/// [`UNREADABLE_RECORD`].
impl Open for Vec<(RecordedMessage, bool)> {
    type Opened = Vec<RecordedMessage>;

    fn open_with(self, sealer: &Sealer) -> Result<Vec<RecordedMessage>> {
        Ok(self
            .into_iter()
            .map(|(mut r, sealed)| {
                sealer.open_record(&mut r, sealed);
                r
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(key: &str, period: i64) -> SealWith {
        SealWith {
            key_id: key.into(),
            period,
        }
    }

    #[test]
    fn seals_and_opens_and_binds_its_domain() {
        let s = Sealer::new(KeySource::Key(MasterKey::from_bytes([7; KEY_LEN])));
        let sealed = s.seal(3, &with("alias/a", 9), BODY, b"hello").unwrap();
        assert!(!sealed.contains("hello"));
        assert_eq!(s.open(BODY, &sealed).unwrap(), b"hello");
        // The same text sealed twice differs (random nonce).
        assert_ne!(
            sealed,
            s.seal(3, &with("alias/a", 9), BODY, b"hello").unwrap()
        );
        // A body's ciphertext does not open as attributes.
        assert!(s.open(ATTRIBUTES, &sealed).is_err());
        // Another master key does not open it.
        let other = Sealer::new(KeySource::Key(MasterKey::from_bytes([8; KEY_LEN])));
        assert!(other.open(BODY, &sealed).is_err());
        // A changed header (another period) does not open it.
        let mut bytes = BASE64.decode(&sealed).unwrap();
        bytes[16] ^= 1;
        assert!(s.open(BODY, &BASE64.encode(bytes)).is_err());
    }

    #[test]
    fn data_keys_differ_per_queue_period_and_key() {
        let s = Sealer::new(KeySource::Key(MasterKey::from_bytes([1; KEY_LEN])));
        let a = s.cipher_of(VERSION, 1, 1, "k").unwrap();
        for (q, p, k) in [(2, 1, "k"), (1, 2, "k"), (1, 1, "j")] {
            let b = s.cipher_of(VERSION, q, p, k).unwrap();
            let n = Nonce::from_slice(&[0; NONCE_LEN]);
            assert_ne!(
                a.encrypt(n, b"x".as_ref()).unwrap(),
                b.encrypt(n, b"x".as_ref()).unwrap()
            );
        }
    }

    #[test]
    fn the_check_value_recognises_the_key_that_sealed() {
        let a = MasterKey::from_bytes([1; KEY_LEN]);
        let b = MasterKey::from_bytes([2; KEY_LEN]);
        assert_eq!(a.check_value(), a.check_value());
        assert_ne!(a.check_value(), b.check_value());
        assert!(!a.check_value().contains(&a.to_base64()));
        let sealed = Sealer::new(KeySource::Key(a.clone()))
            .seal(1, &with("k", 1), BODY, b"x")
            .unwrap();
        let probe = |check: Option<&MasterKey>, body: bool| KeyProbe {
            check: check.map(MasterKey::check_value),
            sealed_body: body.then(|| sealed.clone()),
        };
        // Nothing sealed: any key starts and becomes the database's.
        assert_eq!(verify_master_key(&b, "k", &probe(None, false)), Ok(true));
        assert_eq!(
            verify_master_key(&b, "k", &probe(Some(&a), false)),
            Ok(true)
        );
        // Sealed rows: only their key starts.
        assert_eq!(
            verify_master_key(&a, "k", &probe(Some(&a), true)),
            Ok(false)
        );
        assert!(
            verify_master_key(&b, "the key file K", &probe(Some(&a), true))
                .unwrap_err()
                .starts_with("the key file K does not open")
        );
        // An older database without a check value: a sealed body decides.
        assert_eq!(verify_master_key(&a, "k", &probe(None, true)), Ok(true));
        assert!(verify_master_key(&b, "k", &probe(None, true)).is_err());
    }

    #[test]
    fn topic_data_keys_are_their_own() {
        let s = Sealer::new(KeySource::Key(MasterKey::from_bytes([4; KEY_LEN])));
        let t = TopicSeal {
            topic_id: 3,
            key_id: "alias/aws/sns".into(),
        };
        let sealed = s.seal_topic(&t, RECORDED, "hello topic").unwrap();
        assert!(!sealed.contains("hello"));
        assert_eq!(s.open_topic(RECORDED, &sealed).unwrap(), "hello topic");
        assert!(
            s.open_topic(DELIVERY, &sealed).is_err(),
            "bound to its kind"
        );
        // Not the data key of queue 3 under the same key name.
        let q = s.cipher_of(VERSION, 3, 0, "alias/aws/sns").unwrap();
        let t2 = s.cipher_of(TOPIC_VERSION, 3, 0, "alias/aws/sns").unwrap();
        let n = Nonce::from_slice(&[0; NONCE_LEN]);
        assert_ne!(
            q.encrypt(n, b"x".as_ref()).unwrap(),
            t2.encrypt(n, b"x".as_ref()).unwrap()
        );
    }

    /// Fixed values of the stored format (version 1; master key 0x5a × 32, queue 42,
    /// period 3, SSE-SQS) still open: databases written before cannot become unreadable
    /// by a silent change of the format.
    #[test]
    fn stored_values_of_format_version_1_still_open() {
        let s = Sealer::new(KeySource::Key(MasterKey::from_bytes([0x5a; KEY_LEN])));
        let body = "AQAAAAAAAAAqAAAAAAAAAAMAB1NTRS1TUVOFlghhVgwHUd392lP+mliR+pJd2cuWy7OV3xOL/Sh9BM0Lkm+9pmw=";
        let attributes =
            "AQAAAAAAAAAqAAAAAAAAAAMAB1NTRS1TUVN02eiLVXWWF52ws5j7ifbznvEh+pnXmCqXCxz1cvw=";
        assert_eq!(s.open(BODY, body).unwrap(), b"secret body");
        assert_eq!(s.open(ATTRIBUTES, attributes).unwrap(), b"{}");
    }

    #[test]
    fn a_missing_key_refuses() {
        let s = Sealer::new(KeySource::Missing);
        assert!(s.seal(1, &with("k", 1), BODY, b"x").is_err());
    }

    #[test]
    fn key_file_is_made_private_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sse").join("master.key");
        let a = MasterKey::load_or_create(&path).unwrap();
        let b = MasterKey::load_or_create(&path).unwrap();
        assert_eq!(a.0, b.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
        assert!(permission_warnings(&path).is_empty());
        fs::write(&path, "not a key").unwrap();
        assert!(MasterKey::load_or_create(&path).is_err());
    }
}
