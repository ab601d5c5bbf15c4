//! Noticing that a request's client went away while Loft was still working on it.
//!
//! Loft serves HTTP/1 with hyper's half-close allowed (a client that shuts down its
//! sending side after a request still gets the answer; see [`crate::listen`]), so hyper
//! does not read the socket while a request is under way and cannot tell a client that
//! left from one that half-closed. A long poll (ReceiveMessage with WaitTimeSeconds, the
//! seeds' `?wait_seconds=`) may wait 20 s: if its client timed out or reset the
//! connection meanwhile, the poll would still take the next message that arrives (making
//! it invisible for the visibility timeout, for nobody) and hold its connection slot. A
//! [`ClientLink`], inserted by [`crate::listen`] into every request's extensions, lets
//! such a wait watch the connection: [`ClientLink::gone`] resolves when the peer has sent
//! FIN or reset the connection.
//!
//! Consequence for half-closed clients: a long poll from a client that shut down its
//! sending side ends at once with an empty answer (which a long poll may always give);
//! every other request is served to the end as before.

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::Interest;

/// How often a wait looks at the connection's TCP state when bytes the server has not
/// read yet keep the socket readable (a pipelined request, TLS records).
const RECHECK: Duration = Duration::from_millis(500);

/// Linux's `TCP_ESTABLISHED` (include/net/tcp_states.h), the `tcpi_state` of a connection
/// neither side has begun to close.
const TCP_ESTABLISHED: u8 = 1;

/// The TCP connection a request arrived on (a request extension).
///
/// Holds the socket's descriptor number, valid while the connection is served: the
/// connection task clears [`ClientLink`]'s open flag (through the [`LinkGuard`] it keeps)
/// before the socket closes, and [`ClientLink::gone`] duplicates the descriptor only
/// while the flag is set.
#[derive(Debug, Clone)]
pub struct ClientLink {
    fd: RawFd,
    open: Arc<AtomicBool>,
}

/// Kept by the connection task: dropping it marks the connection's [`ClientLink`]s closed.
#[derive(Debug)]
pub struct LinkGuard {
    open: Arc<AtomicBool>,
}

impl Drop for LinkGuard {
    fn drop(&mut self) {
        self.open.store(false, Ordering::SeqCst);
    }
}

impl ClientLink {
    /// A link to `socket`, and the guard that must live until the socket is closed.
    pub fn new(socket: &impl AsRawFd) -> (ClientLink, LinkGuard) {
        let open = Arc::new(AtomicBool::new(true));
        (
            ClientLink {
                fd: socket.as_raw_fd(),
                open: open.clone(),
            },
            LinkGuard { open },
        )
    }

    /// Resolves when the client can no longer be answered on this connection: the peer
    /// sent FIN (closed, or half-closed its sending side) or reset it, or the connection
    /// is over. Never resolves while the connection is established, and never if the
    /// socket cannot be watched (a descriptor could not be duplicated): then the wait
    /// simply runs its course, as before.
    pub async fn gone(&self) {
        if !self.open.load(Ordering::SeqCst) {
            return;
        }
        // A second descriptor for the same socket, registered with the runtime on its
        // own, so watching it does not disturb hyper's registration of the first.
        // SAFETY: the open flag says the connection task still owns `fd`.
        let dup = unsafe { BorrowedFd::borrow_raw(self.fd) }.try_clone_to_owned();
        let watched = dup.ok().and_then(|fd| {
            let std = std::net::TcpStream::from(fd);
            std.set_nonblocking(true).ok()?;
            tokio::net::TcpStream::from_std(std).ok()
        });
        let Some(socket) = watched else {
            return std::future::pending().await;
        };
        loop {
            match socket.ready(Interest::READABLE).await {
                Err(_) => return,
                Ok(r) if r.is_read_closed() || r.is_error() => return,
                Ok(_) => {}
            }
            if !established(&socket) || !self.open.load(Ordering::SeqCst) {
                return;
            }
            // Readable with the peer still there: bytes wait for hyper. Look again later.
            tokio::time::sleep(RECHECK).await;
        }
    }
}

/// Whether `socket` is in TCP state ESTABLISHED (no FIN or reset from the peer yet).
/// When the state cannot be read, it is taken as established.
fn established(socket: &tokio::net::TcpStream) -> bool {
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for the call; the kernel writes at most `len`
    // bytes.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    rc != 0 || info.tcpi_state == TCP_ESTABLISHED
}
