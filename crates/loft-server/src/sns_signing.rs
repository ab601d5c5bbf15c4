//! SNS message signing: the key and certificate Loft signs HTTP/S deliveries with, the
//! canonical string to sign, and verification as subscribers do it.
//!
//! SNS signs every message it POSTs to an HTTP/S endpoint (Notification,
//! SubscriptionConfirmation, UnsubscribeConfirmation) with an RSA key, and puts the base64
//! signature in `Signature`, the version in `SignatureVersion` and the certificate's address
//! in `SigningCertURL`. Loft makes its own 2048-bit RSA key and a self-signed X.509
//! certificate once, keeps both as PEM files, and serves the certificate PEM at the
//! `SigningCertURL` it sends.
//!
//! Source: the SNS Developer Guide, "Verifying the signatures of Amazon SNS messages" (the
//! string to sign, SignatureVersion 1 = SHA1withRSA and 2 = SHA256withRSA) and "Parsing
//! message formats" (the HTTP/HTTPS Notification, SubscriptionConfirmation and
//! UnsubscribeConfirmation JSON documents).

use std::fs;
use std::io::Write;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use rand::RngCore;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer as _, Verifier as _};
use rsa::{RsaPrivateKey, RsaPublicKey};
use sha1::Sha1;
use sha2::Sha256;
use x509_cert::builder::{Builder, CertificateBuilder, Profile};
use x509_cert::der::{DecodePem, Encode, EncodePem};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::SubjectPublicKeyInfoOwned;
use x509_cert::time::Validity;
use x509_cert::Certificate;

/// RSA modulus size of the signing key, bits.
pub const KEY_BITS: usize = 2048;
/// How long a new certificate is valid: 10 years, so its dates stay in UTCTime (before
/// 2050). An expired certificate is reissued for the same key on load.
pub const CERT_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
/// The certificate's subject and issuer (it is self-signed).
pub const CERT_SUBJECT: &str = "CN=Loft SNS message signing,O=Loft";
/// File name of the private key (PKCS#8 PEM, `-----BEGIN PRIVATE KEY-----`, mode 0600).
pub const KEY_FILE: &str = "key.pem";
/// File name of the certificate (X.509 PEM, `-----BEGIN CERTIFICATE-----`).
pub const CERT_FILE: &str = "cert.pem";

/// The topic's `SignatureVersion`: which hash the RSA PKCS#1 v1.5 signature uses.
///
/// Source: "Verifying the signatures of Amazon SNS messages" (version 1 is the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SignatureVersion {
    /// `"1"`: SHA1withRSA.
    #[default]
    V1,
    /// `"2"`: SHA256withRSA.
    V2,
}

impl SignatureVersion {
    /// The value of the `SignatureVersion` field and topic attribute: `"1"` or `"2"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureVersion::V1 => "1",
            SignatureVersion::V2 => "2",
        }
    }

    /// Parses `"1"` or `"2"`; `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "1" => Some(SignatureVersion::V1),
            "2" => Some(SignatureVersion::V2),
            _ => None,
        }
    }
}

pub use loft_core::service::SignedFields;

/// AWS's canonical string to sign: for each field of the message type (see
/// [`SignedFields`]), in that documented (byte-sorted) order, `"Name\nvalue\n"`. Optional
/// fields that are `None` are left out entirely, as a missing `Subject` is.
///
/// Source: "Verifying the signatures of Amazon SNS messages", step "Create the string to
/// sign".
pub fn string_to_sign(fields: &SignedFields) -> String {
    let mut out = String::new();
    let mut push = |name: &str, value: Option<&str>| {
        if let Some(value) = value {
            out.push_str(name);
            out.push('\n');
            out.push_str(value);
            out.push('\n');
        }
    };
    push("Message", Some(&fields.message));
    push("MessageId", Some(&fields.message_id));
    if fields.message_type == "Notification" {
        push("Subject", fields.subject.as_deref());
    } else {
        push("SubscribeURL", fields.subscribe_url.as_deref());
    }
    push("Timestamp", Some(&fields.timestamp));
    if fields.message_type != "Notification" {
        push("Token", fields.token.as_deref());
    }
    push("TopicArn", Some(&fields.topic_arn));
    push("Type", Some(&fields.message_type));
    out
}

/// Loft's signing identity: an RSA private key and the self-signed certificate of its
/// public key. Cloning is cheap enough for per-worker copies; `Debug` never shows the key.
#[derive(Clone)]
pub struct Signer {
    v1: SigningKey<Sha1>,
    v2: SigningKey<Sha256>,
    certificate_pem: String,
    certificate_file: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").finish_non_exhaustive()
    }
}

impl Signer {
    fn from_parts(key: RsaPrivateKey, certificate_pem: String) -> Self {
        use sha2::Digest as _;
        let digest = Sha256::digest(certificate_pem.as_bytes());
        Signer {
            v1: SigningKey::<Sha1>::new(key.clone()),
            v2: SigningKey::<Sha256>::new(key),
            certificate_file: format!(
                "SimpleNotificationService-{}.pem",
                hex::encode(&digest[..16])
            ),
            certificate_pem,
        }
    }

    /// Loads [`KEY_FILE`] and [`CERT_FILE`] from `dir`, creating `dir` (mode 0700) and both
    /// files on first use: a new [`KEY_BITS`]-bit key written with file mode 0600, and a new
    /// self-signed certificate. A certificate that is missing, unreadable, expired or not
    /// of this key is reissued for the key; the key itself is never replaced once it
    /// exists, so subscribers' cached certificates stay valid across restarts.
    ///
    /// Errors: a message naming the file for I/O failures and a key file that is not an
    /// RSA PKCS#8 PEM key.
    pub fn load_or_create(dir: &Path) -> Result<Signer, String> {
        loft_core::private_dir::create_private_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let key_path = dir.join(KEY_FILE);
        let cert_path = dir.join(CERT_FILE);
        let key = match fs::read_to_string(&key_path) {
            Ok(pem) => RsaPrivateKey::from_pkcs8_pem(&pem)
                .map_err(|e| format!("{}: not an RSA PKCS#8 PEM key: {e}", key_path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = generate_key()?;
                let pem = key
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| format!("encoding the key: {e}"))?;
                write_atomically(&key_path, pem.as_bytes(), true)?;
                key
            }
            Err(e) => return Err(format!("{}: {e}", key_path.display())),
        };
        let current = fs::read_to_string(&cert_path)
            .ok()
            .filter(|pem| certificate_fits(pem, &key));
        let certificate_pem = match current {
            Some(pem) => pem,
            None => {
                let pem = self_signed_certificate(&key)?;
                write_atomically(&cert_path, pem.as_bytes(), false)?;
                pem
            }
        };
        Ok(Signer::from_parts(key, certificate_pem))
    }

    /// A new key and certificate in memory only (tests, or a server without a data dir).
    ///
    /// Errors: key generation or certificate encoding failed (not expected).
    pub fn generate() -> Result<Signer, String> {
        let key = generate_key()?;
        let certificate_pem = self_signed_certificate(&key)?;
        Ok(Signer::from_parts(key, certificate_pem))
    }

    /// The certificate, PEM (`-----BEGIN CERTIFICATE-----`), as served at `SigningCertURL`.
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// The certificate's file name in `SigningCertURL`, as AWS names it:
    /// `SimpleNotificationService-{id}.pem`, `id` the first 16 bytes of the SHA-256 of the
    /// PEM in lowercase hex, so a reissued certificate gets a new URL.
    pub fn certificate_file(&self) -> &str {
        &self.certificate_file
    }

    /// The `Signature` field: base64 (standard alphabet, padded) of the RSA PKCS#1 v1.5
    /// signature of [`string_to_sign`]`(fields)` with SHA-1 (`V1`) or SHA-256 (`V2`);
    /// 344 characters for the 2048-bit key.
    ///
    /// Source: "Verifying the signatures of Amazon SNS messages".
    pub fn sign(&self, fields: &SignedFields, version: SignatureVersion) -> String {
        let text = string_to_sign(fields);
        let signature = match version {
            SignatureVersion::V1 => self.v1.sign(text.as_bytes()),
            SignatureVersion::V2 => self.v2.sign(text.as_bytes()),
        };
        BASE64.encode(signature.to_bytes())
    }
}

fn generate_key() -> Result<RsaPrivateKey, String> {
    RsaPrivateKey::new(&mut rand::rngs::OsRng, KEY_BITS)
        .map_err(|e| format!("generating the RSA key: {e}"))
}

/// Whether `pem` is a certificate of `key`'s public key that is still valid.
fn certificate_fits(pem: &str, key: &RsaPrivateKey) -> bool {
    let Ok(cert) = Certificate::from_pem(pem.as_bytes()) else {
        return false;
    };
    let not_after = cert.tbs_certificate.validity.not_after.to_system_time();
    public_key_of(&cert).is_ok_and(|k| k == key.to_public_key()) && not_after > SystemTime::now()
}

fn self_signed_certificate(key: &RsaPrivateKey) -> Result<String, String> {
    let public = key.to_public_key();
    let spki = SubjectPublicKeyInfoOwned::from_key(public)
        .map_err(|e| format!("encoding the public key: {e}"))?;
    let subject =
        Name::from_str(CERT_SUBJECT).map_err(|e| format!("the certificate subject: {e}"))?;
    // A positive serial of 16 random bytes with no leading zero byte (RFC 5280 4.1.2.2).
    let mut serial = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut serial);
    serial[0] = (serial[0] & 0x7f) | 0x01;
    let serial = SerialNumber::new(&serial).map_err(|e| format!("the serial number: {e}"))?;
    let validity =
        Validity::from_now(CERT_VALIDITY).map_err(|e| format!("the validity period: {e}"))?;
    let signer = SigningKey::<Sha256>::new(key.clone());
    // A self-signed end-entity certificate: digitalSignature, not a CA.
    let profile = Profile::Leaf {
        issuer: subject.clone(),
        enable_key_agreement: false,
        enable_key_encipherment: false,
    };
    let builder = CertificateBuilder::new(profile, serial, validity, subject, spki, &signer)
        .map_err(|e| format!("building the certificate: {e}"))?;
    let cert = builder
        .build::<Signature>()
        .map_err(|e| format!("signing the certificate: {e}"))?;
    cert.to_pem(LineEnding::LF)
        .map_err(|e| format!("encoding the certificate: {e}"))
}

/// What is wrong with the permissions of a signing directory `dir` and its [`KEY_FILE`]:
/// one sentence for each that its group or other users may read, write or enter, naming
/// the mode and the `chmod` that fixes it. Empty when both are private, when `dir` does not
/// exist yet (it is created private), and on systems without Unix modes.
pub fn permission_warnings(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let open = |path: &Path, private: u32| {
            let mode = fs::metadata(path).ok()?.permissions().mode() & 0o777;
            (mode & 0o077 != 0).then(|| {
                format!(
                    "{} is open to other users (mode {mode:04o}): it holds the SNS signing key; \
                     chmod {private:o} {}",
                    path.display(),
                    path.display()
                )
            })
        };
        out.extend(open(dir, 0o700));
        out.extend(open(&dir.join(KEY_FILE), 0o600));
    }
    #[cfg(not(unix))]
    let _ = dir;
    out
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`, so a
/// crash never leaves half a key. `secret` files get mode 0600 from the start.
fn write_atomically(path: &Path, bytes: &[u8], secret: bool) -> Result<(), String> {
    let tmp = path.with_extension("pem.tmp");
    let fail = |e: std::io::Error| format!("{}: {e}", tmp.display());
    let _ = fs::remove_file(&tmp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut file = options.open(&tmp).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn public_key_of(cert: &Certificate) -> Result<RsaPublicKey, String> {
    let spki = cert
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|e| e.to_string())?;
    RsaPublicKey::from_public_key_der(&spki).map_err(|e| e.to_string())
}

/// Verifies `signature_b64` over `fields` the way the SNS Developer Guide tells subscribers
/// to: take the public key from the certificate (`certificate_pem`, what `SigningCertURL`
/// serves), build [`string_to_sign`] for the message type, base64-decode the signature,
/// and check it as RSA PKCS#1 v1.5 with SHA-1 (`V1`) or SHA-256 (`V2`).
///
/// `false` for any failure: an unreadable certificate or non-RSA key, bad base64, or a
/// signature that does not match. Trusting the certificate itself (where it came from,
/// its chain) is the caller's part; Loft's is self-signed.
///
/// Source: "Verifying the signatures of Amazon SNS messages".
pub fn verify(
    certificate_pem: &str,
    fields: &SignedFields,
    signature_b64: &str,
    version: SignatureVersion,
) -> bool {
    let Ok(cert) = Certificate::from_pem(certificate_pem.as_bytes()) else {
        return false;
    };
    let Ok(public) = public_key_of(&cert) else {
        return false;
    };
    let Ok(bytes) = BASE64.decode(signature_b64.trim()) else {
        return false;
    };
    let Ok(signature) = Signature::try_from(bytes.as_slice()) else {
        return false;
    };
    let text = string_to_sign(fields);
    match version {
        SignatureVersion::V1 => VerifyingKey::<Sha1>::new(public)
            .verify(text.as_bytes(), &signature)
            .is_ok(),
        SignatureVersion::V2 => VerifyingKey::<Sha256>::new(public)
            .verify(text.as_bytes(), &signature)
            .is_ok(),
    }
}

/// A [`Signer`] made on first use: the key is loaded or generated (which takes a moment)
/// only when Loft first signs a message or serves its certificate.
pub struct LazySigner {
    dir: std::path::PathBuf,
    signer: std::sync::OnceLock<Result<Signer, String>>,
}

impl LazySigner {
    /// A signer whose key and certificate live in `dir` (see [`Signer::load_or_create`]).
    pub fn new(dir: std::path::PathBuf) -> Self {
        LazySigner {
            dir,
            signer: std::sync::OnceLock::new(),
        }
    }

    /// [`permission_warnings`] of this signer's directory (checked at start; the key is
    /// made later, on first use).
    pub fn permission_warnings(&self) -> Vec<String> {
        permission_warnings(&self.dir)
    }

    /// The signer, loading or creating it on first call. Errors: the files cannot be read
    /// or written.
    pub fn get(&self) -> Result<&Signer, String> {
        self.signer
            .get_or_init(|| Signer::load_or_create(&self.dir))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl loft_core::service::MessageSigner for LazySigner {
    fn sign(&self, fields: &SignedFields, signature_version: u8) -> String {
        let version = if signature_version == 2 {
            SignatureVersion::V2
        } else {
            SignatureVersion::V1
        };
        match self.get() {
            Ok(signer) => signer.sign(fields, version),
            Err(e) => {
                tracing::error!(error = %e, "cannot sign SNS messages");
                String::new()
            }
        }
    }

    fn certificate_file(&self) -> String {
        match self.get() {
            Ok(signer) => signer.certificate_file().to_owned(),
            Err(_) => loft_core::service::UNSIGNED_CERT_FILE.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    /// One key for the tests that need any key: 2048-bit generation is slow unoptimised.
    fn signer() -> &'static Signer {
        static SIGNER: OnceLock<Signer> = OnceLock::new();
        SIGNER.get_or_init(|| Signer::generate().expect("generate"))
    }

    const TOPIC: &str = "arn:aws:sns:us-east-2:123456789012:s4-MySNSTopic-1G1WEFCOXTC0P";

    fn notification(subject: Option<&str>) -> SignedFields {
        SignedFields {
            message_type: "Notification".into(),
            message: "My Test Message".into(),
            message_id: "4d4dc071-ddbf-465d-bba8-08f81c89da64".into(),
            subject: subject.map(str::to_owned),
            timestamp: "2019-01-31T04:37:04.321Z".into(),
            topic_arn: TOPIC.into(),
            ..SignedFields::default()
        }
    }

    fn confirmation(kind: &str) -> SignedFields {
        SignedFields {
            message_type: kind.into(),
            message: "My Test Message".into(),
            message_id: "3d891288-136d-417f-bc05-901c108273ee".into(),
            subscribe_url: Some(format!(
                "https://sns.us-east-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn={TOPIC}&Token=233"
            )),
            timestamp: "2019-01-31T19:25:13.719Z".into(),
            token: Some("233".into()),
            topic_arn: TOPIC.into(),
            ..SignedFields::default()
        }
    }

    #[test]
    fn string_to_sign_of_a_notification_matches_the_aws_example() {
        // "Verifying the signatures of Amazon SNS messages", the Notification example.
        let expected = format!(
            "Message\nMy Test Message\nMessageId\n4d4dc071-ddbf-465d-bba8-08f81c89da64\n\
             Subject\nMy subject\nTimestamp\n2019-01-31T04:37:04.321Z\nTopicArn\n{TOPIC}\n\
             Type\nNotification\n"
        );
        assert_eq!(string_to_sign(&notification(Some("My subject"))), expected);
        // Without a Subject the pair is left out, not signed empty.
        let expected = format!(
            "Message\nMy Test Message\nMessageId\n4d4dc071-ddbf-465d-bba8-08f81c89da64\n\
             Timestamp\n2019-01-31T04:37:04.321Z\nTopicArn\n{TOPIC}\nType\nNotification\n"
        );
        assert_eq!(string_to_sign(&notification(None)), expected);
        // Confirmation-only fields never enter a notification's string.
        let mut stray = notification(None);
        stray.token = Some("t".into());
        stray.subscribe_url = Some("u".into());
        assert_eq!(string_to_sign(&stray), expected);
    }

    #[test]
    fn string_to_sign_of_confirmations_matches_the_aws_example() {
        for kind in ["SubscriptionConfirmation", "UnsubscribeConfirmation"] {
            let expected = format!(
                "Message\nMy Test Message\nMessageId\n3d891288-136d-417f-bc05-901c108273ee\n\
                 SubscribeURL\nhttps://sns.us-east-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn={TOPIC}&Token=233\n\
                 Timestamp\n2019-01-31T19:25:13.719Z\nToken\n233\nTopicArn\n{TOPIC}\nType\n{kind}\n"
            );
            let mut fields = confirmation(kind);
            assert_eq!(string_to_sign(&fields), expected, "{kind}");
            // A Subject is not part of a confirmation's string.
            fields.subject = Some("ignored".into());
            assert_eq!(string_to_sign(&fields), expected, "{kind}");
        }
    }

    #[test]
    fn signature_versions_round_trip_as_strings() {
        for v in [SignatureVersion::V1, SignatureVersion::V2] {
            assert_eq!(SignatureVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(SignatureVersion::parse("3"), None);
        assert_eq!(SignatureVersion::default(), SignatureVersion::V1);
    }

    #[test]
    fn sign_then_verify_v1_and_v2() {
        let s = signer();
        let cert = s.certificate_pem();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----\n"));
        let messages = [
            notification(Some("My subject")),
            notification(None),
            confirmation("SubscriptionConfirmation"),
            confirmation("UnsubscribeConfirmation"),
        ];
        for fields in &messages {
            let v1 = s.sign(fields, SignatureVersion::V1);
            let v2 = s.sign(fields, SignatureVersion::V2);
            assert_eq!(v1.len(), 344);
            assert_ne!(v1, v2);
            // PKCS#1 v1.5 is deterministic.
            assert_eq!(v1, s.sign(fields, SignatureVersion::V1));
            assert!(verify(cert, fields, &v1, SignatureVersion::V1));
            assert!(verify(cert, fields, &v2, SignatureVersion::V2));
            // A signature is only good for the version it was made with.
            assert!(!verify(cert, fields, &v1, SignatureVersion::V2));
            assert!(!verify(cert, fields, &v2, SignatureVersion::V1));
        }
    }

    #[test]
    fn tampering_fails_verification() {
        let s = signer();
        let cert = s.certificate_pem();
        let fields = notification(Some("My subject"));
        let sig = s.sign(&fields, SignatureVersion::V2);
        type Tamper = fn(&mut SignedFields);
        let tampers: [(&str, Tamper); 7] = [
            ("message", |f| f.message.push('!')),
            ("message id", |f| f.message_id = "x".into()),
            ("subject", |f| f.subject = Some("My subjecT".into())),
            ("subject removed", |f| f.subject = None),
            ("timestamp", |f| {
                f.timestamp = "2019-01-31T04:37:04.322Z".into()
            }),
            ("topic", |f| f.topic_arn.push('2')),
            ("type", |f| {
                f.message_type = "SubscriptionConfirmation".into()
            }),
        ];
        for (what, tamper) in tampers {
            let mut changed = fields.clone();
            tamper(&mut changed);
            assert!(
                !verify(cert, &changed, &sig, SignatureVersion::V2),
                "{what}"
            );
        }
        // A changed signature, garbage base64, another key's certificate, no certificate.
        let mut bytes = BASE64.decode(&sig).unwrap();
        bytes[100] ^= 1;
        assert!(!verify(
            cert,
            &fields,
            &BASE64.encode(&bytes),
            SignatureVersion::V2
        ));
        assert!(!verify(cert, &fields, "not base64!", SignatureVersion::V2));
        let other = Signer::generate().unwrap();
        assert!(!verify(
            other.certificate_pem(),
            &fields,
            &sig,
            SignatureVersion::V2
        ));
        assert!(!verify("garbage", &fields, &sig, SignatureVersion::V2));
    }

    #[test]
    fn load_or_create_keeps_one_identity_per_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let first = Signer::load_or_create(&dir).unwrap();
        let second = Signer::load_or_create(&dir).unwrap();
        assert_eq!(first.certificate_pem(), second.certificate_pem());
        assert_eq!(
            fs::read_to_string(dir.join(CERT_FILE)).unwrap(),
            first.certificate_pem()
        );
        let key_pem = fs::read_to_string(dir.join(KEY_FILE)).unwrap();
        assert!(key_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "the folder is private too");
            assert!(permission_warnings(&dir).is_empty());
        }
        // Signatures from the reloaded signer verify against the first certificate.
        let fields = notification(None);
        let sig = second.sign(&fields, SignatureVersion::V1);
        assert!(verify(
            first.certificate_pem(),
            &fields,
            &sig,
            SignatureVersion::V1
        ));
        // A lost certificate is reissued for the same key.
        fs::remove_file(dir.join(CERT_FILE)).unwrap();
        let third = Signer::load_or_create(&dir).unwrap();
        assert!(verify(
            third.certificate_pem(),
            &fields,
            &sig,
            SignatureVersion::V1
        ));
        // A corrupt key is an error, not silently replaced.
        fs::write(dir.join(KEY_FILE), "junk").unwrap();
        let err = Signer::load_or_create(&dir).unwrap_err();
        assert!(err.contains(KEY_FILE), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_signing_folder_open_to_others_is_reported() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("loft-sns-signing");
        assert!(permission_warnings(&dir).is_empty(), "nothing there yet");
        Signer::load_or_create(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(dir.join(KEY_FILE), fs::Permissions::from_mode(0o644)).unwrap();
        let warnings = permission_warnings(&dir);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("mode 0755") && warnings[0].contains("chmod 700"));
        assert!(warnings[1].contains("mode 0644") && warnings[1].contains("chmod 600"));
        // An existing folder is not changed behind the operator's back.
        Signer::load_or_create(&dir).unwrap();
        assert_eq!(permission_warnings(&dir).len(), 2);
    }

    #[test]
    fn python_cryptography_verifies_loft_signatures() {
        let available = std::process::Command::new("python3")
            .args(["-c", "import cryptography"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !available {
            println!("skipped: python3 with the cryptography module is not installed");
            return;
        }
        // The subscriber's side, written from the AWS guide independently of this module:
        // rebuild the string from the JSON body, then verify with the certificate's key.
        const CHECK: &str = r#"
import base64, json, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
d = sys.argv[1]
cert = x509.load_pem_x509_certificate(open(d + "/cert.pem", "rb").read())
m = json.load(open(d + "/message.json", encoding="utf-8"))
if m["Type"] == "Notification":
    names = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
else:
    names = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
text = "".join(n + "\n" + m[n] + "\n" for n in names if n in m)
digest = {"1": hashes.SHA1(), "2": hashes.SHA256()}[m["SignatureVersion"]]
cert.public_key().verify(base64.b64decode(m["Signature"]), text.encode("utf-8"), padding.PKCS1v15(), digest)
print("verified")
"#;
        let s = signer();
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("cert.pem"), s.certificate_pem()).unwrap();
        fs::write(tmp.path().join("check.py"), CHECK).unwrap();
        let python = |fields: &SignedFields, version: SignatureVersion, signature: &str| {
            let mut body = serde_json::Map::new();
            body.insert("Type".into(), fields.message_type.clone().into());
            body.insert("MessageId".into(), fields.message_id.clone().into());
            if let Some(t) = &fields.token {
                body.insert("Token".into(), t.clone().into());
            }
            body.insert("TopicArn".into(), fields.topic_arn.clone().into());
            if let Some(s) = &fields.subject {
                body.insert("Subject".into(), s.clone().into());
            }
            body.insert("Message".into(), fields.message.clone().into());
            if let Some(u) = &fields.subscribe_url {
                body.insert("SubscribeURL".into(), u.clone().into());
            }
            body.insert("Timestamp".into(), fields.timestamp.clone().into());
            body.insert("SignatureVersion".into(), version.as_str().into());
            body.insert("Signature".into(), signature.into());
            let json = serde_json::Value::Object(body).to_string();
            fs::write(tmp.path().join("message.json"), json).unwrap();
            std::process::Command::new("python3")
                .arg(tmp.path().join("check.py"))
                .arg(tmp.path())
                .output()
                .unwrap()
        };
        let mut unusual = notification(Some("Ünïcode \"subject\""));
        unusual.message = "line one\nline two\ttab {\"json\": true} ✓".into();
        let messages = [
            unusual,
            notification(None),
            confirmation("SubscriptionConfirmation"),
            confirmation("UnsubscribeConfirmation"),
        ];
        for fields in &messages {
            for version in [SignatureVersion::V1, SignatureVersion::V2] {
                let sig = s.sign(fields, version);
                let out = python(fields, version, &sig);
                assert!(
                    out.status.success(),
                    "{} {:?}: {}",
                    fields.message_type,
                    version,
                    String::from_utf8_lossy(&out.stderr)
                );
                // And Python rejects the same message once tampered with.
                let mut changed = fields.clone();
                changed.message.push('.');
                assert!(!python(&changed, version, &sig).status.success());
            }
        }
    }
}
