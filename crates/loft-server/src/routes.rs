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
use axum::Router;
use futures_util::FutureExt;
use loft_core::Service;
use tokio::net::TcpListener;

use crate::auth::{self, Auth};
use crate::listen::Serve;
use crate::observe::{Observation, RequestMetrics, RouteName};
use crate::permissions::Routes;
use crate::state::AppState;
use crate::{aws, console, inspect, metrics, native, reply};
use tracing::Instrument;

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
/// route but `/health`, `/metrics` (unless [`Auth::metrics_auth`]), `/ready` and the
/// signing certificate requires a SigV4 signature; the console and its `/_loft/` routes
/// take HTTP Basic authentication too. Each route's access is its row of
/// [`crate::permissions::ROUTES`].
pub fn router_with(
    service: Arc<Service>,
    signer: Option<Arc<crate::sns_signing::LazySigner>>,
    auth: Arc<Auth>,
) -> Router {
    build(service, signer, auth).0
}

/// The methods and route templates a router was built with ([`Routes::finish`]).
type Registered = Vec<(&'static str, &'static str)>;

/// [`router_with`]'s router, with its state, the request metrics its `observe` layer and
/// `/metrics` share, and the routes it registered.
fn build(
    service: Arc<Service>,
    signer: Option<Arc<crate::sns_signing::LazySigner>>,
    auth: Arc<Auth>,
) -> (Router, AppState, Arc<RequestMetrics>, Registered) {
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
    let mut table = Vec::new();
    let inspect = Routes::new()
        .at("GET", "/_loft/sns/messages", inspect::recorded_messages)
        .at(
            "DELETE",
            "/_loft/sns/messages",
            inspect::delete_recorded_messages,
        )
        // Signed in as the console is, so framed no more than the console may be.
        .layered(|r| {
            r.route_layer(enforce.clone())
                .route_layer(console_auth.clone())
                .route_layer(axum::middleware::from_fn(console::deny_framing))
        })
        .at("GET", "/_loft/sns/{file}", inspect::certificate)
        .finish(&mut table)
        .with_state(inspect_state);
    let native = Routes::new()
        .at("GET", "/queues", native::list_queues)
        .at("POST", "/queues/{name}", native::create_queue)
        .at("POST", "/queues/{name}/messages", native::send_message)
        .at("GET", "/queues/{name}/messages", native::receive_message)
        .at(
            "DELETE",
            "/queues/{name}/messages/{id}",
            native::delete_message,
        )
        .at("GET", "/topics", native::list_topics)
        .at("POST", "/topics/{name}", native::create_topic)
        .at("POST", "/topics/{name}/subscribe", native::subscribe)
        .at("POST", "/topics/{name}/publish", native::publish)
        .layered(|r| r.route_layer(enforce.clone()).route_layer(signed))
        .at("GET", "/health", native::health)
        .finish(&mut table);
    let aws = Routes::new()
        .at("POST", "/", aws::entry)
        .at("GET", "/", aws::entry)
        .at("POST", "/{account}/{queue}", aws::entry)
        .at("GET", "/{account}/{queue}", aws::entry)
        // The queue URLs of regions other than the configured one.
        .at("POST", "/queue/{region}/{account}/{queue}", aws::entry)
        .at("GET", "/queue/{region}/{account}/{queue}", aws::entry)
        .finish(&mut table);
    let lambda = aws::lambda_rest::routes(Routes::new())
        .finish(&mut table)
        .with_state(service.clone())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_signature,
        ));
    let requests = Arc::new(RequestMetrics::default());
    let metrics_signed = state.auth.metrics_auth();
    let ops =
        Routes::new()
            .at("GET", "/metrics", metrics::metrics)
            .layered(|r| match metrics_signed {
                // `--metrics-auth`: a signature, as the AWS routes take, and the table's
                // action for the caller.
                true => r.route_layer(enforce.clone()).route_layer(
                    axum::middleware::from_fn_with_state(state.clone(), auth::require_signature),
                ),
                false => r,
            })
            .at("GET", "/ready", metrics::ready)
            .finish(&mut table)
            .with_state(metrics::Metrics {
                service: service.clone(),
                requests: requests.clone(),
            });
    let console = Routes::new()
        .at("GET", "/console", console::index)
        .at("GET", "/console/", console::index)
        .at("GET", "/console/app.js", console::app_js)
        .at("GET", "/console/style.css", console::style_css)
        .at("GET", "/_loft/queues", console::api::queues)
        .at("GET", "/_loft/queues/{name}/messages", console::api::peek)
        .at("POST", "/_loft/queues/{name}/messages", console::api::send)
        .at("POST", "/_loft/queues/{name}/purge", console::api::purge)
        .at(
            "POST",
            "/_loft/queues/{name}/redrive",
            console::api::redrive,
        )
        .at("GET", "/_loft/topics", console::api::topics)
        .at("GET", "/_loft/mappings", console::api::mappings)
        .at("POST", "/_loft/reset", console::api::reset)
        .at("POST", "/_localstack/state/reset", console::api::reset)
        .layered(|r| r.route_layer(enforce).route_layer(console_auth))
        .finish(&mut table)
        // Outside the authentication layers, so their refusals carry it too.
        .route_layer(axum::middleware::from_fn(console::deny_framing));
    let router = native
        .merge(aws)
        .merge(lambda)
        .merge(inspect)
        .merge(ops)
        .merge(console)
        .fallback(reply::not_found)
        .method_not_allowed_fallback(reply::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            requests.clone(),
            crate::observe::observe,
        ))
        .with_state(state.clone());
    (router, state, requests, table)
}

/// What [`crate::listen::serve`] serves: a [`Router`], and, when built by [`App::new`],
/// a direct route for the AWS protocols' `POST /` and `GET /` (every SQS JSON, SQS query
/// and SNS query call of an SDK) that answers exactly as the router's `/` route does
/// (the same [`crate::observe`] work: request id, span, metrics, access line; axum's
/// `Content-Length`) without the router's per-request work: matching the path, cloning
/// the boxed route services and running the middleware through `from_fn` (21 of a
/// send's ~80 allocations were there: docs/benchmarks/history.md, "Where the allocations
/// are"). Every other request goes to the router.
///
/// Every request a browser made is first checked by a [`crate::browser::BrowserGuard`]
/// (cross-site request forgery, DNS rebinding): refused ones never reach a route.
#[derive(Clone)]
pub struct App {
    router: Router,
    aws_root: Option<AwsRoot>,
    guard: Arc<crate::browser::BrowserGuard>,
    /// The advertised URL the guard was made with (kept for [`App::with_cors`]).
    advertised_url: String,
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
        let advertised_url = service.config().advertised_url.clone();
        let (router, state, requests, _) = build(service, signer, auth);
        App {
            router,
            aws_root: Some(AwsRoot { state, requests }),
            guard: Arc::new(crate::browser::BrowserGuard::new(&[], &advertised_url)),
            advertised_url,
        }
    }

    /// This app answering cross-origin requests from `origins` ([`crate::cors::apply`]);
    /// unchanged when `origins` is empty. With origins every request goes through the
    /// router (the CORS layers wrap its routes), so the direct `/` route is dropped.
    /// The browser guard admits the pages of `origins` too.
    pub fn with_cors(self, origins: &[String]) -> App {
        if origins.is_empty() {
            return self;
        }
        App {
            router: crate::cors::apply(self.router, origins),
            aws_root: None,
            guard: Arc::new(crate::browser::BrowserGuard::new(
                origins,
                &self.advertised_url,
            )),
            advertised_url: self.advertised_url,
        }
    }

    /// This app serving LocalStack's routes too ([`crate::localstack`]: `GET
    /// /_localstack/health`), observed (request ids, access lines, metrics) as every
    /// other route when the app came from [`App::new`].
    pub fn with_localstack_compat(self) -> App {
        let routes = crate::localstack::routes(&mut Vec::new());
        let routes = match &self.aws_root {
            Some(root) => routes.layer(axum::middleware::from_fn_with_state(
                root.requests.clone(),
                crate::observe::observe,
            )),
            None => routes,
        };
        App {
            router: routes.merge(self.router),
            aws_root: self.aws_root,
            guard: self.guard,
            advertised_url: self.advertised_url,
        }
    }

    /// Answers `req`: on the direct route when it is one, else through the router.
    ///
    /// The route is chosen here, before the future: the future holds the chosen route's
    /// future alone, not the request beside it (a long poll holds it for its whole wait:
    /// memory per waiting long poll, BENCHMARKS.md, long polls).
    pub(crate) fn call(
        &self,
        req: axum::extract::Request,
    ) -> impl Future<Output = axum::response::Response> + Send + 'static {
        if let Some(reason) = self.guard.refusal(req.method(), req.uri(), req.headers()) {
            tracing::info!(%reason, path = %req.uri().path(), "a browser's request refused");
            return futures_util::future::Either::Right(futures_util::future::Either::Left(
                std::future::ready(crate::browser::refuse(reason)),
            ));
        }
        if let Some(aws) = &self.aws_root {
            let m = req.method();
            if req.uri().path() == "/" && (m == Method::POST || m == Method::GET) {
                return futures_util::future::Either::Left(aws.call(req));
            }
        }
        futures_util::future::Either::Right(futures_util::future::Either::Right(Serve::call(
            &self.router,
            req,
        )))
    }
}

impl Serve for App {
    fn call(
        &self,
        req: axum::extract::Request,
    ) -> impl Future<Output = axum::response::Response> + Send + use<> {
        App::call(self, req)
    }
}

impl From<Router> for App {
    /// `router` alone: every request goes through it.
    fn from(router: Router) -> App {
        App {
            router,
            aws_root: None,
            guard: Arc::default(),
            advertised_url: String::new(),
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
    /// entry's future, the observation and the span once each (a long poll holds it for
    /// its wait, and hyper keeps a box of its size per connection: BENCHMARKS.md, long polls).
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

#[cfg(test)]
mod route_table {
    use std::collections::BTreeSet;

    use loft_core::clock::{Clock, SystemClock};
    use loft_core::ServiceConfig;
    use loft_store::sqlite::SqliteStore;

    use super::*;
    use crate::auth::Credentials;
    use crate::permissions::ROUTES;

    fn service() -> Arc<Service> {
        Service::new(
            Arc::new(SqliteStore::open_in_memory().expect("in-memory store")),
            Arc::new(SystemClock) as Arc<dyn Clock>,
            ServiceConfig::default(),
            None,
        )
    }

    /// The router built (open, signed, signed with `--metrics-auth`) registers exactly the
    /// access table's rows: no route without a row, no row without a route.
    #[test]
    fn every_route_of_the_router_has_a_row_and_every_row_a_route() {
        let rows: BTreeSet<(&str, &str)> = ROUTES.iter().map(|r| (r.method, r.path)).collect();
        let keys = Credentials::parse("AKID:SECRET").expect("credentials");
        for auth in [
            Auth::open(),
            Auth::new(keys.clone()),
            Auth::new(keys).with_metrics_auth(true),
        ] {
            let (_, _, _, mut registered) = build(service(), None, Arc::new(auth));
            // `--localstack-compat` adds its routes to the same table.
            let _: Router = crate::localstack::routes(&mut registered);
            let registered: BTreeSet<(&str, &str)> = registered.into_iter().collect();
            let unrouted: Vec<_> = rows.difference(&registered).collect();
            let unlisted: Vec<_> = registered.difference(&rows).collect();
            assert!(unrouted.is_empty(), "rows without a route: {unrouted:?}");
            assert!(unlisted.is_empty(), "routes without a row: {unlisted:?}");
        }
    }

    /// A route is registered only through [`Routes::at`]: the router's sources call
    /// axum's `route` in `at` alone, so no route can skip the table.
    #[test]
    fn routes_are_registered_only_through_the_table() {
        let routes = include_str!("routes.rs");
        let table = include_str!("permissions.rs");
        let lambda = include_str!("aws/lambda_rest.rs");
        let localstack = include_str!("localstack.rs");
        let calls = |text: &str| text.matches(concat!(".", "route(")).count();
        assert_eq!(calls(routes), 0, "routes.rs: routes go through Routes::at");
        assert_eq!(
            calls(table),
            1,
            "permissions.rs: only Routes::at calls route"
        );
        assert_eq!(
            calls(lambda),
            0,
            "lambda_rest.rs: routes go through Routes::at"
        );
        assert_eq!(
            calls(localstack),
            0,
            "localstack.rs: routes go through Routes::at"
        );
    }

    #[test]
    #[should_panic(expected = "has no row in permissions::ROUTES")]
    fn a_route_without_a_row_is_refused_when_the_router_is_built() {
        let _ = Routes::<()>::new().at("GET", "/_loft/unlisted", || async { "" });
    }
}
