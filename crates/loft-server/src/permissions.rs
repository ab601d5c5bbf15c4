//! The access table of every route the router serves ([`ROUTES`]): each names its IAM
//! action (the action of its AWS equivalent, checked by [`loft_core::Service::authorize`])
//! or says explicitly why it has none ([`RouteAccess`]). The router registers routes only
//! through the table builder [`Routes`], which refuses a route without a row, and
//! [`enforce`] reads the row of the route a request matched; a route without one is
//! refused (403), never let through.
//!
//! | route | access |
//! |---|---|
//! | `POST`, `GET /`; `/{account}/{queue}`; `/queue/{region}/{account}/{queue}` | each operation's own ([`crate::aws::access`]) |
//! | Lambda REST (`/2015-03-31/event-source-mappings[/][{uuid}]`, `/2015-03-31/functions[/][{name}]`) | each operation's own |
//! | `GET /queues`, `GET /_loft/queues` | `sqs:ListQueues` (caller's account) |
//! | `POST /queues/{name}` | `sqs:CreateQueue` |
//! | `POST /queues/{name}/messages`, `POST /_loft/queues/{name}/messages` | `sqs:SendMessage` |
//! | `GET /queues/{name}/messages`, `GET /_loft/queues/{name}/messages` | `sqs:ReceiveMessage` |
//! | `DELETE /queues/{name}/messages/{id}` | `sqs:DeleteMessage` and `sqs:ReceiveMessage` (the id deletes as a receipt handle does, and a handle is had only by receiving) |
//! | `POST /_loft/queues/{name}/purge` | `sqs:PurgeQueue` |
//! | `POST /_loft/queues/{name}/redrive` | `sqs:StartMessageMoveTask`, `sqs:ReceiveMessage`, `sqs:DeleteMessage`, `sqs:GetQueueAttributes` (StartMessageMoveTask's on its source); the task's steps are then checked as the caller's, as StartMessageMoveTask's are |
//! | `GET /topics`, `GET /_loft/topics` | `sns:ListTopics` (caller's account) |
//! | `POST /topics/{name}` | `sns:CreateTopic` |
//! | `POST /topics/{name}/subscribe` | `sns:Subscribe` |
//! | `POST /topics/{name}/publish` | `sns:Publish` |
//! | `GET /_loft/mappings` | `lambda:ListEventSourceMappings` (caller's account) |
//! | `GET`, `DELETE /_loft/sns/messages` | `sns:ListRecordedMessages`, `sns:DeleteRecordedMessages` (caller's account; Loft's own actions, `sns:*` covers them) |
//! | `GET /console`, `/console/`, `/console/app.js`, `/console/style.css` | signed in (any key), no action |
//! | `GET /metrics` | public, or with `--metrics-auth` signed and `cloudwatch:GetMetricData` (caller's account; [`crate::metrics`]) |
//! | `GET /health`, `GET /ready`, `GET /_loft/sns/{file}` (the signing certificate) | public |
//! | `POST /_loft/reset`, `POST /_localstack/state/reset` | `loft:Reset`, on the caller's account (Loft's own action: `loft:*` or `*` in a policy) |
//!
//! An action on a `{name}` is checked on the queue or topic of that name: the seeds'
//! routes name the default account's (as the seeds' API always has), the console's take a
//! store key in any form ([`loft_core::Service::canonical_key`]). An action on no one
//! resource is checked on the caller's own account, whose resources the listing then
//! shows ([`loft_core::service::Sqs::visible_queues`]).
//!
//! The caller is the [`Principal`] the authentication middleware ([`crate::auth`]) put in
//! the request's extensions; without one (an open Loft) nothing is checked. A refusal is
//! `403 {"error": "AccessDenied: User: ... is not authorized to perform: ..."}`.

use std::collections::HashMap;

use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use loft_core::service::{Principal, Target};
use loft_core::{Error, ErrorCode};

use crate::reply::NativeError;
use crate::state::AppState;

/// What a route's IAM action acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    /// The queue its `{name}` names.
    Queue,
    /// The topic its `{name}` names.
    Topic,
    /// No one resource: the caller's own account (`arn:aws:SERVICE:REGION:ACCOUNT:`).
    CallerAccount,
}

/// What a route requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteAccess {
    /// Nothing: answered to anyone (health, readiness, the SNS signing certificate).
    Public,
    /// `/metrics`: public, or with `--metrics-auth` a SigV4 signature and
    /// [`METRICS_ACTION`] on the caller's account, and then only that account's series
    /// ([`crate::metrics`]).
    Metrics,
    /// A configured key (signature or the console's HTTP Basic), no action: the
    /// console's page and its static files, which hold no account's data.
    SignedIn,
    /// Checked per operation, by the operation's own declaration ([`crate::aws::access`]):
    /// the AWS protocols and the Lambda REST API.
    Operation,
    /// This IAM action (`sqs:SendMessage`) on this resource.
    Action(&'static str, On),
    /// Every one of these IAM actions on this resource, checked in order (the first
    /// refused is named): a route that does what an AWS operation with further required
    /// permissions does (StartMessageMoveTask also needs `sqs:ReceiveMessage`,
    /// `sqs:DeleteMessage` and `sqs:GetQueueAttributes` on its source, SQS Developer
    /// Guide, "Amazon SQS API permissions: Actions and resource reference"), or whose
    /// parameter stands for what another action gives (the seeds' message id, which
    /// deletes as a receipt handle does, and a receipt handle is had only by receiving).
    AllOf(&'static [&'static str], On),
}

/// The action `GET /metrics` needs under `--metrics-auth`, on the caller's account: AWS
/// serves a service's metrics through CloudWatch, whose read is `GetMetricData`.
pub const METRICS_ACTION: &str = "cloudwatch:GetMetricData";

/// One row of [`ROUTES`]: a method, a route template as the router writes it, its access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `GET`, `POST`, `PUT`, `DELETE`.
    pub method: &'static str,
    /// The template (`/queues/{name}/messages`).
    pub path: &'static str,
    /// What it requires.
    pub access: RouteAccess,
}

const fn row(method: &'static str, path: &'static str, access: RouteAccess) -> Route {
    Route {
        method,
        path,
        access,
    }
}

use On::{CallerAccount, Queue, Topic};
use RouteAccess::{Action, AllOf, Metrics, Operation, Public, SignedIn};

/// Every route the router serves, one row per method and template (adding a route is
/// adding its row here; the router refuses a route without one).
pub const ROUTES: &[Route] = &[
    // The AWS protocols (SQS JSON and query, SNS query) on `/` and on queue URLs.
    row("POST", "/", Operation),
    row("GET", "/", Operation),
    row("POST", "/{account}/{queue}", Operation),
    row("GET", "/{account}/{queue}", Operation),
    row("POST", "/queue/{region}/{account}/{queue}", Operation),
    row("GET", "/queue/{region}/{account}/{queue}", Operation),
    // Lambda REST.
    row("GET", "/2015-03-31/event-source-mappings", Operation),
    row("POST", "/2015-03-31/event-source-mappings", Operation),
    row("GET", "/2015-03-31/event-source-mappings/", Operation),
    row("POST", "/2015-03-31/event-source-mappings/", Operation),
    row("GET", "/2015-03-31/event-source-mappings/{uuid}", Operation),
    row("PUT", "/2015-03-31/event-source-mappings/{uuid}", Operation),
    row(
        "DELETE",
        "/2015-03-31/event-source-mappings/{uuid}",
        Operation,
    ),
    row("GET", "/2015-03-31/functions", Operation),
    row("GET", "/2015-03-31/functions/", Operation),
    row("GET", "/2015-03-31/functions/{name}", Operation),
    // The seeds' API.
    row("GET", "/queues", Action("sqs:ListQueues", CallerAccount)),
    row("POST", "/queues/{name}", Action("sqs:CreateQueue", Queue)),
    row(
        "POST",
        "/queues/{name}/messages",
        Action("sqs:SendMessage", Queue),
    ),
    row(
        "GET",
        "/queues/{name}/messages",
        Action("sqs:ReceiveMessage", Queue),
    ),
    row(
        "DELETE",
        "/queues/{name}/messages/{id}",
        AllOf(&["sqs:DeleteMessage", "sqs:ReceiveMessage"], Queue),
    ),
    row("GET", "/topics", Action("sns:ListTopics", CallerAccount)),
    row("POST", "/topics/{name}", Action("sns:CreateTopic", Topic)),
    row(
        "POST",
        "/topics/{name}/subscribe",
        Action("sns:Subscribe", Topic),
    ),
    row(
        "POST",
        "/topics/{name}/publish",
        Action("sns:Publish", Topic),
    ),
    row("GET", "/health", Public),
    // Operations.
    row("GET", "/metrics", Metrics),
    row("GET", "/ready", Public),
    // LocalStack's health route (`--localstack-compat`, crate::localstack).
    row("GET", "/_localstack/health", Public),
    // The console and its JSON routes.
    row("GET", "/console", SignedIn),
    row("GET", "/console/", SignedIn),
    row("GET", "/console/app.js", SignedIn),
    row("GET", "/console/style.css", SignedIn),
    row(
        "GET",
        "/_loft/queues",
        Action("sqs:ListQueues", CallerAccount),
    ),
    row(
        "GET",
        "/_loft/queues/{name}/messages",
        Action("sqs:ReceiveMessage", Queue),
    ),
    row(
        "POST",
        "/_loft/queues/{name}/messages",
        Action("sqs:SendMessage", Queue),
    ),
    row(
        "POST",
        "/_loft/queues/{name}/purge",
        Action("sqs:PurgeQueue", Queue),
    ),
    row(
        "POST",
        "/_loft/queues/{name}/redrive",
        AllOf(
            &[
                "sqs:StartMessageMoveTask",
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
            ],
            Queue,
        ),
    ),
    row(
        "GET",
        "/_loft/topics",
        Action("sns:ListTopics", CallerAccount),
    ),
    row(
        "GET",
        "/_loft/mappings",
        Action("lambda:ListEventSourceMappings", CallerAccount),
    ),
    // Inspection: recorded SNS messages, the signing certificate.
    row(
        "GET",
        "/_loft/sns/messages",
        Action("sns:ListRecordedMessages", CallerAccount),
    ),
    row(
        "DELETE",
        "/_loft/sns/messages",
        Action("sns:DeleteRecordedMessages", CallerAccount),
    ),
    row("GET", "/_loft/sns/{file}", Public),
    // Reset: the caller's account's state (Loft's own action; LocalStack's route too).
    row("POST", "/_loft/reset", Action("loft:Reset", CallerAccount)),
    row(
        "POST",
        "/_localstack/state/reset",
        Action("loft:Reset", CallerAccount),
    ),
];

/// The row of `method` (`HEAD` is `GET`'s) on route template `path`; `None` when the
/// table has none (such a route is refused, [`enforce`]).
pub fn route_access(method: &Method, path: &str) -> Option<RouteAccess> {
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    ROUTES
        .iter()
        .find(|r| r.method == method && r.path == path)
        .map(|r| r.access)
}

/// The router's routes as they are registered: only through [`Routes::at`], which
/// refuses (panics at build, before any request) a method and template without a row in
/// the access table ([`ROUTES`]), and records each one so that the
/// table and the router can be compared ([`Routes::finish`]).
pub struct Routes<S> {
    router: Router<S>,
    registered: Vec<(&'static str, &'static str)>,
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    /// No routes yet.
    pub fn new() -> Routes<S> {
        Routes {
            router: Router::new(),
            registered: Vec::new(),
        }
    }

    /// Adds `handler` for `method` (`GET`, `POST`, `PUT`, `DELETE`; a `GET` answers
    /// `HEAD` too) on `path`. Several methods of one path merge into its route.
    ///
    /// Panics: the access table has no row for `method` and `path`, or `method` is not
    /// one of those four: a programming error, found by every test that builds a router.
    pub fn at<H, T>(mut self, method: &'static str, path: &'static str, handler: H) -> Routes<S>
    where
        H: axum::handler::Handler<T, S>,
        T: 'static,
    {
        let m = Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        assert!(
            route_access(&m, path).is_some(),
            "route {method} {path} has no row in permissions::ROUTES"
        );
        let filter = match method {
            "GET" => axum::routing::MethodFilter::GET,
            "POST" => axum::routing::MethodFilter::POST,
            "PUT" => axum::routing::MethodFilter::PUT,
            "DELETE" => axum::routing::MethodFilter::DELETE,
            other => panic!("route {other} {path}: not a method Loft routes"),
        };
        self.router = self.router.route(path, axum::routing::on(filter, handler));
        self.registered.push((method, path));
        self
    }

    /// Applies `f` to the router so far (its `route_layer`s wrap the routes added before).
    pub fn layered(mut self, f: impl FnOnce(Router<S>) -> Router<S>) -> Routes<S> {
        self.router = f(self.router);
        self
    }

    /// The router, its routes' methods and templates appended to `registered`.
    pub fn finish(self, registered: &mut Vec<(&'static str, &'static str)>) -> Router<S> {
        registered.extend(self.registered);
        self.router
    }
}

impl<S: Clone + Send + Sync + 'static> Default for Routes<S> {
    fn default() -> Routes<S> {
        Routes::new()
    }
}

/// Middleware: checks the route's row (see the module doc) for the caller. Must run
/// inside the authentication middleware, which sets the caller.
pub async fn enforce(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return next.run(req).await;
    };
    let template = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    let access = route_access(req.method(), &template);
    let (actions, on): (&[&str], On) = match &access {
        Some(Action(action, on)) => (std::slice::from_ref(action), *on),
        Some(AllOf(actions, on)) => (actions, *on),
        // Only reached under `--metrics-auth` (the route is layered with this middleware
        // then): reading metrics is CloudWatch's GetMetricData in AWS.
        Some(Metrics) => (&[METRICS_ACTION], CallerAccount),
        Some(Public | SignedIn | Operation) => return next.run(req).await,
        None => {
            return NativeError::refused(&Error::new(
                ErrorCode::AccessDenied,
                format!("no access is declared for {} {template}", req.method()),
            ))
            .into_response()
        }
    };
    let (mut parts, body) = req.into_parts();
    let name = match on {
        Queue | Topic => {
            use axum::extract::FromRequestParts;
            Path::<HashMap<String, String>>::from_request_parts(&mut parts, &())
                .await
                .ok()
                .and_then(|Path(p)| p.get("name").cloned())
                // The console's routes take a store key in any form (see
                // `Service::canonical_key`); the seeds' routes take a seed name as it is.
                .map(|n| match template.starts_with("/_loft/") {
                    true => state.service.canonical_key(&n),
                    false => n,
                })
        }
        CallerAccount => None,
    };
    let svc = &state.service;
    let mut result = Ok(());
    for &action in actions {
        result = match (on, &name) {
            (Queue, Some(n)) => svc.authorize(&principal, action, Target::Queue(n)).await,
            (Topic, Some(n)) => svc.authorize(&principal, action, Target::Topic(n)).await,
            // A queue or topic route whose name did not decode is checked on the caller's
            // account; the handler refuses the name in its own words.
            (Queue | Topic | CallerAccount, _) => {
                let service = match action.split_once(':') {
                    Some(("sns", _)) => "sns",
                    Some(("lambda", _)) => "lambda",
                    Some(("cloudwatch", _)) => "cloudwatch",
                    Some(("loft", _)) => "loft",
                    _ => "sqs",
                };
                let target = Target::Account {
                    service,
                    account: &principal.account_id,
                };
                svc.authorize(&principal, action, target).await
            }
        };
        if result.is_err() {
            break;
        }
    }
    match result {
        Ok(()) => next.run(Request::from_parts(parts, body)).await,
        Err(e) => NativeError::refused(&e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_and_template_has_one_row() {
        let mut seen = std::collections::HashSet::new();
        for r in ROUTES {
            assert!(seen.insert((r.method, r.path)), "two rows for {r:?}");
        }
    }

    #[test]
    fn head_reads_gets_row_and_unknown_routes_have_none() {
        assert_eq!(
            route_access(&Method::HEAD, "/health"),
            Some(RouteAccess::Public)
        );
        assert_eq!(route_access(&Method::GET, "/nope"), None);
        assert_eq!(route_access(&Method::POST, "/health"), None);
    }
}
