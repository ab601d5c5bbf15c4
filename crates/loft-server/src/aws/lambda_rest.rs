//! Lambda over REST-JSON (botocore `lambda/2015-03-31`, protocol `rest-json`): the routes
//! under `/2015-03-31/`, the decoder (path parameters, query string, JSON body) into
//! [`LambdaRequest`], the encoder of [`LambdaResponse`] (JSON with the model's status
//! code), and errors as Lambda sends them: the status of the error table's row,
//! `x-amzn-ErrorType: <code>` and `{"Type": "User"|"Service", "message"|"Message"}` (the
//! member name the model gives each error shape).
//!
//! Accepted with and without a trailing slash: `/2015-03-31/event-source-mappings` (boto3
//! and the CLI send `.../event-source-mappings/`) and `/2015-03-31/functions`.

use std::sync::Arc;

use crate::body::BodyError;
use crate::body::NativeBody;
use crate::permissions::Routes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use loft_core::service::Principal;
use loft_core::{Error, ErrorCode, Service};
use serde::de::DeserializeOwned;

use super::lambda::{self, types::*};
use super::Context;
use crate::observe::OperationLabel;

/// The metric protocol label of Lambda requests.
pub const PROTOCOL: &str = "lambda-rest-json";

/// The routes, added to `routes` (their handlers take the service as state).
pub fn routes(routes: Routes<Arc<Service>>) -> Routes<Arc<Service>> {
    routes
        .at("GET", "/2015-03-31/event-source-mappings", mappings)
        .at("POST", "/2015-03-31/event-source-mappings", mappings)
        .at("GET", "/2015-03-31/event-source-mappings/", mappings)
        .at("POST", "/2015-03-31/event-source-mappings/", mappings)
        .at("GET", "/2015-03-31/event-source-mappings/{uuid}", mapping)
        .at("PUT", "/2015-03-31/event-source-mappings/{uuid}", mapping)
        .at(
            "DELETE",
            "/2015-03-31/event-source-mappings/{uuid}",
            mapping,
        )
        .at("GET", "/2015-03-31/functions", functions)
        .at("GET", "/2015-03-31/functions/", functions)
        .at("GET", "/2015-03-31/functions/{name}", function)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::LambdaInvalidParameterValue, message)
}

/// The JSON body as `T`; an empty body is `{}`.
fn body<T: DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(bytes)
        .map_err(|e| invalid(format!("Could not read the request body: {e}")))
}

fn query<T: DeserializeOwned + Default>(q: Option<&str>) -> Result<T, Error> {
    match q {
        None | Some("") => Ok(T::default()),
        Some(q) => {
            let pairs: Vec<(String, String)> =
                form_urlencoded::parse(q.as_bytes()).into_owned().collect();
            let map: serde_json::Map<String, serde_json::Value> = pairs
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            serde_json::from_value(serde_json::Value::Object(map))
                .map_err(|e| invalid(format!("Invalid query string: {e}")))
        }
    }
}

/// Renders an error as Lambda does (see the module documentation).
pub fn error(e: &Error) -> Response {
    let lambda = matches!(
        e.code,
        ErrorCode::LambdaInvalidParameterValue
            | ErrorCode::LambdaResourceNotFound
            | ErrorCode::LambdaResourceConflict
            | ErrorCode::LambdaResourceInUse
            // A refused action: `AccessDeniedException` (403), as Lambda answers it.
            | ErrorCode::AccessDenied
    );
    let row = e.code.row();
    let (status, kind, fault) = if lambda {
        (row.status, e.code.json_type(), "User")
    } else if row.status >= 500 {
        (500, "ServiceException", "Service")
    } else {
        (row.status, "InvalidParameterValueException", "User")
    };
    let member = match kind {
        "InvalidParameterValueException" | "ResourceConflictException" => "message",
        _ => "Message",
    };
    let body = serde_json::json!({ "Type": fault, member: e.message });
    let mut resp = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(kind) {
        resp.headers_mut().insert("x-amzn-errortype", v);
    }
    resp
}

/// Encodes a response: JSON with the operation's status code.
pub fn response(r: &LambdaResponse) -> Response {
    let (status, json) = match r {
        LambdaResponse::EventSourceMapping(s, m) => (*s, serde_json::to_string(m)),
        LambdaResponse::EventSourceMappings(l) => (200, serde_json::to_string(l)),
        LambdaResponse::Function(f) => (200, serde_json::to_string(f)),
        LambdaResponse::Functions(l) => (200, serde_json::to_string(l)),
    };
    match json {
        Ok(body) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            [("content-type", "application/json")],
            body,
        )
            .into_response(),
        Err(e) => error(&Error::internal(e)),
    }
}

/// The caller of a Lambda request: the one the authentication middleware
/// ([`crate::auth::require_signature`]) found, else (an open Loft) the open caller.
fn context(svc: &Service, principal: Option<Extension<Principal>>) -> Context {
    Context {
        principal: principal.map_or_else(|| svc.open_principal(), |Extension(p)| p),
        base_url: String::new(),
        trace_header: None,
        client: None,
        unsigned: false,
    }
}

async fn run(
    svc: &Service,
    principal: Option<Extension<Principal>>,
    req: Result<LambdaRequest, Error>,
) -> Response {
    let ctx = context(svc, principal);
    let (op, outcome) = match req {
        Ok(r) => {
            let op = r.operation();
            (op, lambda::call(svc, &ctx, r).await)
        }
        Err(e) => ("Unknown", Err(e)),
    };
    let mut resp = match outcome {
        Ok(r) => response(&r),
        Err(e) => error(&e),
    };
    resp.extensions_mut().insert(OperationLabel {
        operation: op.into(),
        protocol: PROTOCOL,
    });
    resp
}

/// [`run`] on the request `decode` makes of the body; a body that stalled, ran over 1 MiB
/// or found no room in the budget ([`crate::body`]) is answered in Lambda's error shape
/// with the body's headers (`Retry-After`, `Connection: close`).
async fn run_with_body(
    svc: &Service,
    principal: Option<Extension<Principal>>,
    bytes: Result<NativeBody, BodyError>,
    decode: impl FnOnce(&[u8]) -> Result<LambdaRequest, Error>,
) -> Response {
    match bytes {
        Ok(bytes) => run(svc, principal, decode(&bytes)).await,
        Err(r) => {
            let mut resp = error(&r.to_error());
            r.add_headers(resp.headers_mut());
            resp
        }
    }
}

async fn mappings(
    State(svc): State<Arc<Service>>,
    principal: Option<Extension<Principal>>,
    method: Method,
    RawQuery(q): RawQuery,
    bytes: Result<NativeBody, BodyError>,
) -> Response {
    run_with_body(&svc, principal, bytes, |bytes| {
        if method == Method::POST {
            body(bytes).map(LambdaRequest::CreateEventSourceMapping)
        } else {
            query(q.as_deref()).map(LambdaRequest::ListEventSourceMappings)
        }
    })
    .await
}

async fn mapping(
    State(svc): State<Arc<Service>>,
    principal: Option<Extension<Principal>>,
    method: Method,
    Path(uuid): Path<String>,
    bytes: Result<NativeBody, BodyError>,
) -> Response {
    run_with_body(&svc, principal, bytes, |bytes| match method {
        Method::PUT => body(bytes).map(|body| {
            LambdaRequest::UpdateEventSourceMapping(UpdateEventSourceMappingInput { uuid, body })
        }),
        Method::DELETE => Ok(LambdaRequest::DeleteEventSourceMapping(
            DeleteEventSourceMappingRequest { uuid },
        )),
        _ => Ok(LambdaRequest::GetEventSourceMapping(
            GetEventSourceMappingRequest { uuid },
        )),
    })
    .await
}

async fn functions(
    State(svc): State<Arc<Service>>,
    principal: Option<Extension<Principal>>,
    RawQuery(q): RawQuery,
) -> Response {
    let req = query(q.as_deref()).map(LambdaRequest::ListFunctions);
    run(&svc, principal, req).await
}

async fn function(
    State(svc): State<Arc<Service>>,
    principal: Option<Extension<Principal>>,
    Path(function_name): Path<String>,
) -> Response {
    let req = LambdaRequest::GetFunction(GetFunctionRequest { function_name });
    run(&svc, principal, Ok(req)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_lambdas_shape() {
        let e = Error::new(ErrorCode::LambdaResourceNotFound, "Function not found: x");
        let r = error(&e);
        assert_eq!(r.status(), 404);
        assert_eq!(r.headers()["x-amzn-errortype"], "ResourceNotFoundException");
        let e = Error::new(ErrorCode::LambdaInvalidParameterValue, "bad");
        let r = error(&e);
        assert_eq!(r.status(), 400);
        assert_eq!(
            r.headers()["x-amzn-errortype"],
            "InvalidParameterValueException"
        );
        let r = error(&Error::internal("disk"));
        assert_eq!(r.status(), 500);
        assert_eq!(r.headers()["x-amzn-errortype"], "ServiceException");
    }

    #[test]
    fn bodies_and_queries_decode_as_the_model_names_them() {
        let r: CreateEventSourceMappingRequest = body(
            br#"{"FunctionName":"f","EventSourceArn":"arn:aws:sqs:us-east-1:000000000000:q",
                "BatchSize":5,"MaximumBatchingWindowInSeconds":2,"Enabled":false,
                "FunctionResponseTypes":["ReportBatchItemFailures"],
                "FilterCriteria":{"Filters":[{"Pattern":"{}"}]},
                "ScalingConfig":{"MaximumConcurrency":3},"StartingPosition":"LATEST"}"#,
        )
        .unwrap();
        assert_eq!(r.function_name.as_deref(), Some("f"));
        assert_eq!(r.batch_size, Some(5));
        assert_eq!(r.maximum_batching_window_in_seconds, Some(2));
        assert_eq!(r.enabled, Some(false));
        assert_eq!(r.filter_criteria.unwrap().filters[0].pattern, "{}");
        assert_eq!(r.scaling_config.unwrap().maximum_concurrency, Some(3));
        let e = body::<CreateEventSourceMappingRequest>(br#"{"BatchSize":"ten"}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::LambdaInvalidParameterValue);
        let q: ListEventSourceMappingsRequest =
            query(Some("FunctionName=f&MaxItems=2&Marker=1")).unwrap();
        assert_eq!(q.function_name.as_deref(), Some("f"));
        assert_eq!(q.max_items.as_deref(), Some("2"));
        let empty: UpdateEventSourceMappingRequest = body(b"").unwrap();
        assert_eq!(empty, UpdateEventSourceMappingRequest::default());
    }
}
