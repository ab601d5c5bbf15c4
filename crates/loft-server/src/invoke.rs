//! Calling a configured function: one HTTP request per invocation, its answer read as
//! Lambda's Invoke API defines it, or as a plain HTTP handler's.
//!
//! - `invoke_endpoint`: `POST {base}/2015-03-31/functions/{name}/invocations` with
//!   `X-Amz-Invocation-Type` and the event as the body (Lambda API Reference, Invoke): `Event`
//!   for SNS (as AWS; the function's `invocation_type` can say `RequestResponse`),
//!   `RequestResponse` for event source mappings. The answer: 2xx with
//!   `X-Amz-Function-Error` is a function error (`Unhandled`, `Handled`), 2xx without it
//!   success (the body is the function's result; `202` and no body for `Event`); 429 and 5xx mean the
//!   function did not run (throttled, retried with backoff); any other status refuses the
//!   call for good. With `signing`, the call carries a SigV4 signature (service `lambda`),
//!   so AWS Lambda itself can be the host.
//! - `url`: `POST {url}` with the event as the body; 2xx is success, anything else a
//!   function error.
//!
//! Either way a call that cannot connect is "not invoked" (retried), and one still running
//! after the function's `timeout_seconds` is a function error `TimedOut`, as Lambda's
//! "Task timed out". Function hosts are the operator's (the config file names them), so
//! the SNS endpoint policy does not restrict them. Source: Lambda API Reference `Invoke`
//! (statuses, `X-Amz-Function-Error`, `X-Amz-Invocation-Type`).

use std::time::Duration;

use loft_core::functions::{FunctionConfig, FunctionTarget, InvokeOutcome};

use crate::sigv4;

pub use loft_core::functions::InvocationType;

/// The HTTP client of function calls: no redirects, no proxies, a 5 s connect timeout
/// (each call's whole timeout is its function's `timeout_seconds`).
///
/// Errors: the client cannot be built.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("loft/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| e.to_string())
}

/// The URL a call to `f` goes to.
pub fn invocation_url(f: &FunctionConfig) -> String {
    match &f.target {
        FunctionTarget::InvokeEndpoint(base) => format!(
            "{}/2015-03-31/functions/{}/invocations",
            base.trim_end_matches('/'),
            f.name
        ),
        FunctionTarget::Url(url) => url.clone(),
    }
}

/// Invokes `f` with `payload` (the event, JSON) and reads the answer (see the module
/// documentation). `region` is the signature scope's when `f.signing` names none.
/// Never fails: every failure is an [`InvokeOutcome`].
///
/// `kind` is the `X-Amz-Invocation-Type` of an Invoke API call (a `url` function gets no
/// such header). With `Event` the host answers `202` once it has queued the event and
/// applies its own asynchronous configuration; Loft retries only what the host did not
/// take (429, 5xx, no connection) by [`loft_core::functions::async_retry`]. With
/// `RequestResponse` the function's error comes back too, and an SNS caller retries it
/// the same way.
pub async fn invoke(
    client: &reqwest::Client,
    f: &FunctionConfig,
    kind: InvocationType,
    payload: &str,
    region: &str,
) -> InvokeOutcome {
    let url = invocation_url(f);
    let mut req = client
        .post(&url)
        .timeout(Duration::from_secs(f.timeout_seconds))
        .header("content-type", "application/json")
        .body(payload.to_owned());
    let api = matches!(f.target, FunctionTarget::InvokeEndpoint(_));
    if api {
        req = req.header("x-amz-invocation-type", kind.as_str());
        if let Some(s) = &f.signing {
            match sign(&url, payload, s, region) {
                Ok(headers) => {
                    for (k, v) in headers {
                        req = req.header(k, v);
                    }
                }
                Err(e) => return InvokeOutcome::Rejected(format!("cannot sign the call: {e}")),
            }
        }
    }
    tracing::trace!(function = %f.name, kind = kind.as_str(), %url, "invoking");
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) if e.is_timeout() && !e.is_connect() => {
            return InvokeOutcome::FunctionError {
                error_type: "TimedOut".into(),
                payload: format!(
                    "{{\"errorMessage\":\"Task timed out after {} seconds\"}}",
                    f.timeout_seconds
                ),
            }
        }
        Err(e) => return InvokeOutcome::Throttled(error_chain(&e)),
    };
    let status = resp.status();
    let function_error = resp
        .headers()
        .get("x-amz-function-error")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match resp.text().await {
        Ok(b) => b,
        Err(e) if e.is_timeout() => {
            return InvokeOutcome::FunctionError {
                error_type: "TimedOut".into(),
                payload: String::new(),
            }
        }
        Err(e) => return InvokeOutcome::Throttled(error_chain(&e)),
    };
    if !api {
        return if status.is_success() {
            InvokeOutcome::Success(body)
        } else {
            InvokeOutcome::FunctionError {
                error_type: format!("HTTP {}", status.as_u16()),
                payload: body,
            }
        };
    }
    match (status.as_u16(), function_error) {
        (200..=299, Some(kind)) => InvokeOutcome::FunctionError {
            error_type: kind,
            payload: body,
        },
        (200..=299, None) => InvokeOutcome::Success(body),
        (429 | 500..=599, _) => {
            InvokeOutcome::Throttled(format!("HTTP status {}: {}", status.as_u16(), cut(&body)))
        }
        (code, _) => InvokeOutcome::Rejected(format!("HTTP status {code}: {}", cut(&body))),
    }
}

fn cut(s: &str) -> String {
    s.chars().take(256).collect()
}

/// The SigV4 headers (`x-amz-date`, `authorization`, `x-amz-security-token`) of a POST of
/// `body` to `url` for service `lambda`.
fn sign(
    url: &str,
    body: &str,
    s: &loft_core::functions::FunctionSigning,
    region: &str,
) -> Result<Vec<(String, String)>, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    let host = match (parsed.host_str(), parsed.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        (None, _) => return Err("the URL has no host".into()),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let amz_date = sigv4::format_amz_date(now);
    let mut headers = axum::http::HeaderMap::new();
    let mut put = |k: &'static str, v: &str| -> Result<(), String> {
        headers.insert(k, v.parse().map_err(|_| format!("bad {k} value"))?);
        Ok(())
    };
    put("host", &host)?;
    put("x-amz-date", &amz_date)?;
    if let Some(t) = &s.session_token {
        put("x-amz-security-token", t)?;
    }
    let region = s.region.as_deref().unwrap_or(region);
    let auth = sigv4::authorization(
        &sigv4::Request {
            method: "POST",
            path: parsed.path(),
            query: parsed.query(),
            headers: &headers,
            authority: None,
            body: body.as_bytes(),
        },
        &sigv4::SigningParams {
            access_key: &s.access_key_id,
            secret: &s.secret_access_key,
            region,
            service: "lambda",
            amz_date: &amz_date,
        },
    );
    let mut out = vec![
        ("x-amz-date".to_owned(), amz_date),
        ("authorization".to_owned(), auth),
    ];
    if let Some(t) = &s.session_token {
        out.push(("x-amz-security-token".to_owned(), t.clone()));
    }
    Ok(out)
}

/// An error and its sources, `: `-joined (reqwest's own message hides the cause); the
/// text a failed delivery or invocation is recorded with.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loft_core::functions::FunctionSigning;

    #[test]
    fn signed_invoke_calls_verify_for_service_lambda() {
        let s = FunctionSigning {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "secret".into(),
            session_token: Some("token".into()),
            region: Some("eu-west-1".into()),
        };
        let url = "http://127.0.0.1:3002/2015-03-31/functions/f/invocations";
        let body = r#"{"Records":[]}"#;
        let headers = sign(url, body, &s, "us-east-1").unwrap();
        let mut map = axum::http::HeaderMap::new();
        map.insert("host", "127.0.0.1:3002".parse().unwrap());
        for (k, v) in &headers {
            map.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let req = sigv4::Request {
            method: "POST",
            path: "/2015-03-31/functions/f/invocations",
            query: None,
            headers: &map,
            authority: None,
            body: body.as_bytes(),
        };
        let v = sigv4::verify(&req, now, |k| (k == "AKIDEXAMPLE").then_some("secret")).unwrap();
        assert_eq!(
            (v.service.as_str(), v.region.as_str()),
            ("lambda", "eu-west-1")
        );
        let tampered = sigv4::Request { body: b"{}", ..req };
        assert!(sigv4::verify(&tampered, now, |_| Some("secret")).is_err());
    }

    #[test]
    fn invocation_urls() {
        let f = FunctionConfig::new("f", FunctionTarget::InvokeEndpoint("http://h:1/".into()));
        assert_eq!(
            invocation_url(&f),
            "http://h:1/2015-03-31/functions/f/invocations"
        );
        let g = FunctionConfig::new("g", FunctionTarget::Url("http://h:2/x".into()));
        assert_eq!(invocation_url(&g), "http://h:2/x");
    }
}
