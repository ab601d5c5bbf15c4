//! The router and the server loop.
//!
//! Every listener serves every API: the seeds' REST/JSON routes, (on `POST /` and on
//! queue URLs) the AWS protocols, and Loft's own routes: `/metrics`, `/ready`, the console
//! (`/console`) and its JSON routes under `/_loft/`. One middleware ([`crate::observe`])
//! wraps them all: request ids, access logs, request metrics.

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderValue, Method};
use axum::routing::{delete, get, post};
use axum::Router;
use futures_util::FutureExt;
use loft_core::Service;
use tokio::net::TcpListener;

use crate::auth::{self, AppState, Auth};
use crate::observe::{Observation, RequestMetrics, RouteName};
use crate::{aws, console, inspect, metrics, native};
use tracing::Instrument;

/// Largest request body of the seeds' API and the console, bytes (1 MiB); bodies are read
/// under it by [`crate::native::NativeBody`].
pub const NATIVE_BODY_LIMIT: usize = 1024 * 1024;

/// The router over `service`, open to every caller: the seeds' API, the AWS protocols,
/// Loft's inspection, metrics, readiness and console routes, with JSON errors for unknown
/// routes. `signer`'s certificate is served at SigningCertURL when given. See
/// [`router_with`] to require signatures.
pub fn router(
    service: Arc<Service>,
    signer: Option<Arc<crate::sns_signing::LazySigner>>,
) -> Router {
    router_with(service, signer, Arc::new(Auth::open()))
}

/// The router over `service` under `auth` ([`crate::auth`]): with credentials, every
/// route but `/health`, `/metrics`, `/ready` and the signing certificate requires a SigV4
/// signature; the console and its `/_loft/` routes take HTTP Basic authentication too.
pub fn router_with(
    service: Arc<Service>,
    signer: Option<Arc<crate::sns_signing::LazySigner>>,
    auth: Arc<Auth>,
) -> Router {
    build(service, signer, auth).0
}

/// [`router_with`]'s router, with its state and the request metrics its `observe` layer
/// and `/metrics` share.
fn build(
    service: Arc<Service>,
    signer: Option<Arc<crate::sns_signing::LazySigner>>,
    auth: Arc<Auth>,
) -> (Router, AppState, Arc<RequestMetrics>) {
    let state = AppState {
        service: service.clone(),
        auth,
    };
    let signed = axum::middleware::from_fn_with_state(state.clone(), auth::require_signature);
    let console_auth =
        axum::middleware::from_fn_with_state(state.clone(), auth::require_console_auth);
    // Inside the authentication layers (added before them), so the caller is known.
    let enforce = axum::middleware::from_fn_with_state(state.clone(), crate::permissions::enforce);
    let inspect_state = inspect::Inspect {
        service: service.clone(),
        signer,
    };
    let inspect = Router::new()
        .route(
            "/_loft/sns/messages",
            get(inspect::recorded_messages).delete(inspect::delete_recorded_messages),
        )
        .route_layer(enforce.clone())
        .route_layer(console_auth.clone())
        .route("/_loft/sns/{file}", get(inspect::certificate))
        .with_state(inspect_state);
    let native = Router::new()
        .route("/queues", get(native::list_queues))
        .route("/queues/{name}", post(native::create_queue))
        .route(
            "/queues/{name}/messages",
            post(native::send_message).get(native::receive_message),
        )
        .route(
            "/queues/{name}/messages/{id}",
            delete(native::delete_message),
        )
        .route("/topics", get(native::list_topics))
        .route("/topics/{name}", post(native::create_topic))
        .route("/topics/{name}/subscribe", post(native::subscribe))
        .route("/topics/{name}/publish", post(native::publish))
        .route_layer(enforce.clone())
        .route_layer(signed)
        .route("/health", get(native::health));
    let aws = Router::new()
        .route("/", axum::routing::post(aws::entry).get(aws::entry))
        .route(
            "/{account}/{queue}",
            axum::routing::post(aws::entry).get(aws::entry),
        )
        // The queue URLs of regions other than the configured one.
        .route(
            "/queue/{region}/{account}/{queue}",
            axum::routing::post(aws::entry).get(aws::entry),
        );
    let lambda = aws::lambda_rest::routes(service.clone()).route_layer(
        axum::middleware::from_fn_with_state(state.clone(), auth::require_signature),
    );
    let requests = Arc::new(RequestMetrics::default());
    let ops = Router::new()
        .route("/metrics", get(metrics::metrics))
        .route("/ready", get(metrics::ready))
        .with_state(metrics::Metrics {
            service: service.clone(),
            requests: requests.clone(),
        });
    let console = Router::new()
        .route("/console", get(console::index))
        .route("/console/", get(console::index))
        .route("/console/app.js", get(console::app_js))
        .route("/console/style.css", get(console::style_css))
        .route("/_loft/queues", get(console::api::queues))
        .route(
            "/_loft/queues/{name}/messages",
            get(console::api::peek).post(console::api::send),
        )
        .route("/_loft/queues/{name}/purge", post(console::api::purge))
        .route("/_loft/queues/{name}/redrive", post(console::api::redrive))
        .route("/_loft/topics", get(console::api::topics))
        .route("/_loft/mappings", get(console::api::mappings))
        .route("/_loft/reset", post(console::api::reset))
        .route("/_localstack/state/reset", post(console::api::reset))
        .route_layer(enforce)
        .route_layer(console_auth);
    let router = native
        .merge(aws)
        .merge(lambda)
        .merge(inspect)
        .merge(ops)
        .merge(console)
        .fallback(native::not_found)
        .method_not_allowed_fallback(native::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            requests.clone(),
            crate::observe::observe,
        ))
        .with_state(state.clone());
    (router, state, requests)
}

/// What [`crate::listen::serve`] serves: a [`Router`], and, when built by [`App::new`],
/// a direct route for the AWS protocols' `POST /` and `GET /` (every SQS JSON, SQS query
/// and SNS query call of an SDK) that answers exactly as the router's `/` route does
/// (the same [`crate::observe`] work: request id, span, metrics, access line; axum's
/// `Content-Length`) without the router's per-request work: matching the path, cloning
/// the boxed route services and running the middleware through `from_fn` (issue 19: 21
/// of a send's ~80 allocations were there). Every other request goes to the router.
#[derive(Clone)]
pub struct App {
    router: Router,
    aws_root: Option<AwsRoot>,
}

/// The direct `/` route of [`App`]: the router's state and request metrics.
#[derive(Clone)]
struct AwsRoot {
    state: AppState,
    requests: Arc<RequestMetrics>,
}

impl App {
    /// [`router_with`]'s router over `service` under `auth`, with the direct `/` route.
    pub fn new(
        service: Arc<Service>,
        signer: Option<Arc<crate::sns_signing::LazySigner>>,
        auth: Arc<Auth>,
    ) -> App {
        let (router, state, requests) = build(service, signer, auth);
        App {
            router,
            aws_root: Some(AwsRoot { state, requests }),
        }
    }

    /// This app answering cross-origin requests from `origins` ([`crate::cors::apply`]);
    /// unchanged when `origins` is empty. With origins every request goes through the
    /// router (the CORS layers wrap its routes), so the direct `/` route is dropped.
    pub fn with_cors(self, origins: &[String]) -> App {
        if origins.is_empty() {
            return self;
        }
        App {
            router: crate::cors::apply(self.router, origins),
            aws_root: None,
        }
    }

    /// Answers `req`: on the direct route when it is one, else through the router.
    ///
    /// The route is chosen here, before the future: the future holds the chosen route's
    /// future alone, not the request beside it (a long poll holds it for its whole wait;
    /// issue 19 item 6).
    pub(crate) fn call(
        &self,
        req: axum::extract::Request,
    ) -> impl Future<Output = axum::response::Response> + Send + 'static {
        if let Some(aws) = &self.aws_root {
            let m = req.method();
            if req.uri().path() == "/" && (m == Method::POST || m == Method::GET) {
                return futures_util::future::Either::Left(aws.call(req));
            }
        }
        let mut router = self.router.clone();
        let routed = tower_service::Service::call(&mut router, req);
        // Boxed: the router's future holds the request until its route takes it, and
        // this future would otherwise be as large for every request.
        futures_util::future::Either::Right(Box::pin(async move {
            match routed.await {
                Ok(resp) => resp,
                Err(e) => match e {},
            }
        }))
    }
}

impl From<Router> for App {
    /// `router` alone: every request goes through it.
    fn from(router: Router) -> App {
        App {
            router,
            aws_root: None,
        }
    }
}

impl AwsRoot {
    /// What the router does for `POST /` and `GET /`: `observe` around [`aws::entry`],
    /// then `Content-Length` from the body's exact size when the answer has none (axum's
    /// top-level route future does the same).
    ///
    /// The request is opened (its observation begun, [`aws::entry`] called) before the
    /// future, and the future is made of combinators rather than an `async` block (which
    /// would keep a second slot for the entry's future it awaits), so it holds the
    /// entry's future, the observation and the span once each (issue 19 item 6: a long
    /// poll holds it for its wait, and hyper keeps a box of its size per connection).
    fn call(
        &self,
        mut req: axum::extract::Request,
    ) -> impl Future<Output = axum::response::Response> + Send + 'static {
        let (obs, span) = Observation::begin(&mut req, Some(RouteName::Fixed("/")));
        let answer = aws::entry(
            State(self.state.service.clone()),
            State(self.state.auth.clone()),
            req,
        );
        let requests = self.requests.clone();
        // `finish` runs inside the span too: its access line is the request's.
        answer
            .map(move |resp| {
                let mut resp = obs.finish(&requests, resp);
                if !resp.headers().contains_key(CONTENT_LENGTH) {
                    if let Some(size) = axum::body::HttpBody::size_hint(resp.body()).exact() {
                        resp.headers_mut()
                            .insert(CONTENT_LENGTH, HeaderValue::from(size));
                    }
                }
                resp
            })
            .instrument(span)
    }
}

/// Serves `router` over plain HTTP on every listener until `shutdown` completes, then stops accepting,
/// lets in-flight requests finish and returns; with the default
/// [`crate::listen::ServerLimits`] (see [`crate::listen::serve`] to choose them).
///
/// Errors: an I/O error of any listener.
pub async fn serve(
    listeners: Vec<TcpListener>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listeners = listeners
        .into_iter()
        .map(crate::listen::Listener::plain)
        .collect();
    crate::listen::serve(listeners, router, shutdown, Default::default()).await
}

#[cfg(test)]
mod app_future_sizes {
    use super::*;
    use crate::aws::future_sizes::{print, probe};

    #[test]
    #[ignore = "prints sizes; run by hand"]
    fn app_future_sizes() {
        let rows = [
            (
                "App::call",
                probe(|(a, r): (App, axum::extract::Request)| a.call(r)),
            ),
            (
                "AwsRoot::call",
                probe(|(a, r): (AwsRoot, axum::extract::Request)| a.call(r)),
            ),
            (
                "router call",
                probe(|(a, r): (Router, axum::extract::Request)| async move {
                    let mut a = a;
                    tower_service::Service::call(&mut a, r).await
                }),
            ),
            ("Observation", std::mem::size_of::<Observation>()),
            ("App", std::mem::size_of::<App>()),
        ];
        print(&rows);
    }
}
