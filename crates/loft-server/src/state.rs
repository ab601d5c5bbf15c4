//! The router's state: the service and the authentication policy, shared by every route
//! and middleware of [`crate::routes`]. Handlers and middleware take the part they need
//! (`State<Arc<Service>>`, `State<Arc<Auth>>`) through `FromRef`.

use std::sync::Arc;

use axum::extract::FromRef;
use loft_core::Service;

use crate::auth::Auth;

/// Router state: the service and the authentication policy. Handlers take either part
/// (`State<Arc<Service>>`, `State<Arc<Auth>>`).
#[derive(Clone)]
pub struct AppState {
    /// The service.
    pub service: Arc<Service>,
    /// Who may call.
    pub auth: Arc<Auth>,
}

impl FromRef<AppState> for Arc<Service> {
    fn from_ref(s: &AppState) -> Self {
        s.service.clone()
    }
}

impl FromRef<AppState> for Arc<Auth> {
    fn from_ref(s: &AppState) -> Self {
        s.auth.clone()
    }
}
