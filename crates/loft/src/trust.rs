//! `loft serve`'s security options: credentials (SigV4), the SNS endpoint policy and the
//! limits. Flattened into `ServeArgs`, so `main.rs` only wires the result in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use loft_core::endpoint_policy::{Cidr, EndpointPolicy, PRIVATE_RANGES};
use loft_core::service::Limits;
use loft_core::ServiceConfig;
use loft_server::auth::{Auth, Credentials};
use loft_server::listen::ServerLimits;
use loft_server::proxy::TrustedProxies;

/// Credentials, endpoint policy and limits of `loft serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct TrustArgs {
    /// File of access keys, one ACCESS_KEY_ID:SECRET_ACCESS_KEY[:ACCOUNT_ID[:IDENTITY]] a
    /// line ('#' comments; IDENTITY is user/NAME or role/NAME).
    /// With any key configured (here or in LOFT_CREDENTIALS), every request but /health,
    /// /ready, /metrics and the SNS signing certificate must carry a valid AWS Signature
    /// Version 4; the web console also takes HTTP Basic (an access key id and its secret).
    #[arg(long, env = "LOFT_CREDENTIALS_FILE")]
    credentials_file: Option<PathBuf>,

    /// Access keys as ACCESS_KEY_ID:SECRET[:ACCOUNT_ID[:IDENTITY]],... Environment only: a
    /// command-line secret would show in the process list.
    #[arg(skip = std::env::var("LOFT_CREDENTIALS").ok())]
    credentials: Option<String>,

    /// CIDR range SNS HTTP/S endpoints may not reach, on top of the always-denied
    /// link-local and metadata ranges (169.254.0.0/16, fe80::/10, fd00:ec2::254,
    /// 100.100.100.200, 0.0.0.0/8, ::); repeatable.
    #[arg(
        long = "sns-deny-cidr",
        env = "LOFT_SNS_DENY_CIDR",
        value_delimiter = ','
    )]
    sns_deny_cidr: Vec<Cidr>,

    /// Also deny private and loopback ranges (10/8, 172.16/12, 192.168/16, 100.64/10,
    /// 127/8, ::1, fc00::/7) to SNS endpoints: the production setting.
    #[arg(long, env = "LOFT_SNS_DENY_PRIVATE")]
    sns_deny_private: bool,

    /// CIDR range SNS HTTP/S endpoints may reach even when a deny range holds it;
    /// repeatable (e.g. --sns-deny-private --sns-allow-cidr 10.1.2.0/24).
    #[arg(
        long = "sns-allow-cidr",
        env = "LOFT_SNS_ALLOW_CIDR",
        value_delimiter = ','
    )]
    sns_allow_cidr: Vec<Cidr>,

    /// Most open connections over all listeners; more are answered 503.
    #[arg(long, env = "LOFT_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub(crate) max_connections: usize,

    /// Most open connections from one client IP address (a trusted proxy's PROXY
    /// protocol client); more are answered 503. Unset (the default): no per-address
    /// limit, since behind a load balancer or NAT every client shares one address.
    #[arg(long, env = "LOFT_MAX_CONNECTIONS_PER_IP")]
    pub(crate) max_connections_per_ip: Option<usize>,

    /// Load balancer or proxy (an IP address or CIDR range) whose PROXY protocol v2
    /// header and X-Forwarded-For name the client, for --max-connections-per-ip and
    /// aws:SourceIp; from any other address both are ignored. Repeatable.
    #[arg(
        long = "trusted-proxy",
        env = "LOFT_TRUSTED_PROXY",
        value_delimiter = ',',
        value_name = "CIDR",
        value_parser = loft_server::proxy::parse_cidr
    )]
    pub(crate) trusted_proxies: Vec<ipnet::IpNet>,

    /// Largest request head (request line and headers), bytes; larger is answered 431.
    #[arg(long, env = "LOFT_MAX_HEADER_BYTES", default_value_t = 64 * 1024)]
    pub(crate) max_header_bytes: usize,

    /// Seconds (fractions allowed) a request's head and body get from its first byte
    /// (and a TLS handshake, and an unread response); a stalled head closes the
    /// connection, a stalled body is answered 408.
    #[arg(
        long,
        env = "LOFT_REQUEST_TIMEOUT",
        default_value_t = 30.0,
        value_name = "SECONDS"
    )]
    pub(crate) request_timeout: f64,

    /// Body bytes per second that earn a request one more second, up to one request
    /// timeout ahead: a body arriving at least this fast is never cut (0: none).
    #[arg(long, env = "LOFT_MIN_BODY_RATE", default_value_t = 4 * 1024, value_name = "BYTES")]
    pub(crate) min_body_rate: u64,

    /// Seconds (fractions allowed) a connection may stay idle between requests before it
    /// is closed.
    #[arg(
        long,
        env = "LOFT_KEEP_ALIVE_TIMEOUT",
        default_value_t = 75.0,
        value_name = "SECONDS"
    )]
    pub(crate) keep_alive_timeout: f64,

    /// Most bytes of request bodies held at once over all requests; a body that does not
    /// fit is answered 503 with Retry-After: 1 instead of being read.
    #[arg(long, env = "LOFT_MAX_BODY_BYTES_IN_FLIGHT", default_value_t = 256 * 1024 * 1024, value_name = "BYTES")]
    pub(crate) max_body_bytes_in_flight: usize,

    /// Most queues per account, in all its regions together (each account of
    /// [[credentials]] has its own count); creating one more answers OverLimit.
    #[arg(long, env = "LOFT_MAX_QUEUES", default_value_t = 100_000)]
    pub(crate) max_queues: u64,

    /// Most topics per account, in all its regions together (SNS's quota is per account);
    /// creating one more answers TopicLimitExceeded.
    #[arg(long, env = "LOFT_MAX_TOPICS", default_value_t = 100_000)]
    pub(crate) max_topics: u64,

    /// Most in-flight messages of a standard queue (SQS: 120,000); a receive at the limit
    /// answers OverLimit.
    #[arg(long, env = "LOFT_MAX_IN_FLIGHT", default_value_t = 120_000)]
    pub(crate) max_in_flight: u64,

    /// Most in-flight messages of a FIFO queue (SQS: 20,000); a receive at the limit
    /// returns no messages.
    #[arg(long, env = "LOFT_MAX_IN_FLIGHT_FIFO", default_value_t = 20_000)]
    pub(crate) max_in_flight_fifo: u64,

    /// Turn SQS FIFO throughput quotas off (on by default, as AWS: 300 send, receive and
    /// delete transactions a second per FIFO queue or message group, then
    /// RequestThrottled); for benchmarks and loads that must not be throttled.
    #[arg(long, env = "LOFT_NO_SQS_QUOTAS")]
    pub(crate) no_sqs_quotas: bool,

    /// Require a SigV4 signature on `GET /metrics` and show each caller only its own
    /// account's queue and topic series (node-wide series only to the server's account):
    /// the switch for deployments shared by several accounts. Off by default (open
    /// `/metrics`, as Prometheus scrapes it). Needs credentials (`--credentials`).
    #[arg(long, env = "LOFT_METRICS_AUTH")]
    pub(crate) metrics_auth: bool,
}

/// `seconds` as a duration: positive, finite, at most a day.
fn seconds(name: &str, seconds: f64) -> Result<Duration, String> {
    if !(seconds > 0.0 && seconds <= 86_400.0) {
        return Err(format!(
            "{name} must be a number of seconds above 0 and at most 86400, not {seconds}"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// What [`TrustArgs`] resolve to.
#[derive(Debug, Clone)]
pub struct Trust {
    /// How many access keys are configured (0: open).
    keys: usize,
    /// Who may call.
    pub auth: Arc<Auth>,
    /// Connection and header limits of the listeners.
    pub server: ServerLimits,
    /// Service limits.
    pub limits: Limits,
    /// The SNS endpoint policy.
    pub endpoint_policy: EndpointPolicy,
}

impl Trust {
    /// Logs whether requests must be signed: a warning when no credentials are configured
    /// (Loft then accepts every request). Called once Loft has started, so that a start-up
    /// error is not preceded by it.
    pub fn log_mode(&self) {
        if self.keys == 0 {
            tracing::warn!(
                "no credentials configured: Loft accepts every request, signed or not; set \
                 --credentials-file or LOFT_CREDENTIALS to require AWS Signature Version 4"
            );
        } else {
            tracing::info!(keys = self.keys, "SigV4 authentication required");
        }
    }
}

impl TrustArgs {
    /// Reads the credentials file and environment and builds the policies
    /// ([`Trust::log_mode`] then says whether Loft accepts unsigned requests).
    ///
    /// `file_keys` are the config file's `[[credentials]]`; the credentials file's and
    /// `LOFT_CREDENTIALS`'s entries win for a key id they share.
    ///
    /// Errors: an unreadable credentials file, a malformed entry, a zero limit, a timeout
    /// that is not a positive number of seconds (at most a day), a body budget under the
    /// largest request body, `--metrics-auth` without credentials.
    pub fn load(&self, file_keys: Credentials) -> Result<Trust, String> {
        let mut credentials = file_keys;
        if let Some(path) = &self.credentials_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the credentials file {}: {e}", path.display()))?;
            credentials
                .extend(Credentials::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?);
        }
        if let Some(list) = &self.credentials {
            credentials
                .extend(Credentials::parse(list).map_err(|e| format!("LOFT_CREDENTIALS: {e}"))?);
        }
        let keys = credentials.len();
        if self.metrics_auth && keys == 0 {
            return Err(
                "--metrics-auth needs credentials (--credentials-file or LOFT_CREDENTIALS): \
                 without keys there is no signature to require"
                    .into(),
            );
        }
        let mut deny = self.sns_deny_cidr.clone();
        if self.sns_deny_private {
            deny.extend(
                PRIVATE_RANGES
                    .iter()
                    .map(|c| c.parse::<Cidr>().expect("valid range")),
            );
        }
        let endpoint_policy = EndpointPolicy::new(deny, self.sns_allow_cidr.clone());
        for (name, v) in [
            ("--max-connections", Some(self.max_connections)),
            ("--max-connections-per-ip", self.max_connections_per_ip),
        ] {
            if v == Some(0) {
                return Err(format!("{name} must be at least 1"));
            }
        }
        let largest_body = loft_server::aws::AWS_BODY_LIMIT;
        if self.max_body_bytes_in_flight < largest_body {
            return Err(format!(
                "--max-body-bytes-in-flight must be at least {largest_body} (the largest \
                 request body, 10 MiB), not {}",
                self.max_body_bytes_in_flight
            ));
        }
        for (name, v) in [
            ("--max-in-flight", self.max_in_flight),
            ("--max-in-flight-fifo", self.max_in_flight_fifo),
        ] {
            if v == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        Ok(Trust {
            keys,
            auth: Arc::new(Auth::new(credentials).with_metrics_auth(self.metrics_auth)),
            server: ServerLimits {
                max_connections: self.max_connections,
                max_connections_per_ip: self.max_connections_per_ip,
                trusted_proxies: TrustedProxies(self.trusted_proxies.clone()),
                max_header_bytes: self.max_header_bytes,
                request_timeout: seconds("--request-timeout", self.request_timeout)?,
                min_body_rate: self.min_body_rate,
                keep_alive_timeout: seconds("--keep-alive-timeout", self.keep_alive_timeout)?,
                max_body_bytes_in_flight: self.max_body_bytes_in_flight,
                ..ServerLimits::default()
            },
            limits: Limits {
                max_queues: self.max_queues,
                max_topics: self.max_topics,
                max_in_flight: self.max_in_flight,
                max_in_flight_fifo: self.max_in_flight_fifo,
                sqs_quotas: !self.no_sqs_quotas,
            },
            endpoint_policy,
        })
    }
}

impl Trust {
    /// `config` with these limits and this endpoint policy, and with
    /// [`ServiceConfig::multi_account`] on when a key names an account other than
    /// `config.account_id`.
    pub fn configure(&self, config: ServiceConfig) -> ServiceConfig {
        let multi_account = !self
            .auth
            .credentials()
            .other_accounts(&config.account_id)
            .is_empty();
        ServiceConfig {
            limits: self.limits.clone(),
            endpoint_policy: self.endpoint_policy.clone(),
            multi_account,
            ..config
        }
    }
}
