//! The router and the server loop.
//!
//! Every listener serves every API: the seeds' REST/JSON routes, (on `POST /` and on
//! queue URLs) the AWS protocols, and Loft's own routes: `/metrics`, `/ready`, the console
//! (`/console`) and its JSON routes under `/_loft/`. One middleware ([`crate::observe`])
//! wraps them all: request ids, access logs, request metrics.

use std::future::Future;
use std::sync::Arc;

use axum::routing::{delete, get, post};
use axum::Router;
use loft_core::Service;
use tokio::net::TcpListener;

use crate::auth::{self, AppState, Auth};
use crate::observe::RequestMetrics;
use crate::{aws, console, inspect, metrics, native};

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
        .route_layer(enforce)
        .route_layer(console_auth);
    native
        .merge(aws)
        .merge(lambda)
        .merge(inspect)
        .merge(ops)
        .merge(console)
        .fallback(native::not_found)
        .method_not_allowed_fallback(native::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            requests,
            crate::observe::observe,
        ))
        .with_state(state)
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
