//! The monitor's read-only HTTP endpoint: `GET /metrics` for Prometheus and
//! `GET /healthz` for supervisors and load balancers.
//!
//! A monitor must never be disturbed by its scrapers. The endpoint therefore
//! runs on one dedicated OS thread ("latscope-http"), with a single-threaded
//! tokio runtime, which the daemon pins to its housekeeping CPUs through
//! `on_thread_start`; nothing of it runs on a measuring thread. Its only
//! contact with the measurements is the [`Source`], which locks briefly.
//!
//! Whatever a client sends, the cost to the daemon is bounded, by [`Limits`]:
//!
//! * `max_connections` (64): at most this many connections are served at
//!   once, counted by a semaphore. A connection accepted beyond it is
//!   refused at once: it gets a best-effort `503 Service Unavailable` with
//!   `Retry-After: 1` and is closed. Refusing rather than queueing keeps the
//!   number of open sockets, and so the memory and file descriptors, bounded
//!   whatever the number of clients, and a queue would only hand each waiting
//!   connection to a slow client's slot later; Prometheus retries at its next
//!   scrape anyway. A slot held by an idle or slow client is freed by the
//!   two timeouts below.
//! * `header_timeout` (5 s): the request line and headers must arrive within
//!   this time of the connection's start, or it is closed without an answer.
//!   This ends idle connections and slowloris clients (one byte now and then).
//! * `request_timeout` (10 s): the whole connection, reading the request and
//!   writing the answer, ends after this time. This ends clients that never
//!   read their answer and so would hold a slot with a full send buffer.
//! * `max_header_bytes` (16 KiB): a longer request head gets
//!   `431 Request Header Fields Too Large` and the connection is closed, so a
//!   client cannot make the server buffer more. Prometheus's request head is
//!   about 400 bytes.
//!
//! Each connection serves one request (HTTP keep-alive is off): a scraper
//! polls every 15 s or more, so reusing a connection would save nothing,
//! while a connection kept idle between scrapes would hold a slot and race
//! the server's closing it against the scraper's next request.
//!
//! Routes: `GET /metrics` and `GET /healthz`, and `HEAD` of both (the same
//! headers, no body). Another path is `404`, another method `405` with
//! `Allow: GET, HEAD`, a request with a body or one that does not parse `400`.
//! Nothing a request does changes the daemon's state.
//!
//! The `Accept` header goes to [`Source::metrics`] as it came, so the
//! monitor negotiates the exposition format (text or protobuf) in one place.
//!
//! With an [`Access`] from the web configuration (`--web.config.file`):
//!
//! * TLS: every connection starts with a TLS handshake, bounded by
//!   `header_timeout`; a client that does not speak TLS (plain HTTP) fails
//!   it (a TLS alert) and is closed, never answered in plain text (a connection beyond
//!   `max_connections` is closed without the 503).
//! * Basic authentication: every request, on every path, needs the
//!   credentials of one of the users, else `401 Unauthorized` with
//!   `WWW-Authenticate: Basic`. A bcrypt verification is slow on purpose,
//!   so it runs on a blocking thread (which inherits the server thread's
//!   CPUs), one at a time ([`crate::auth`] caches outcomes, so a scraper
//!   costs one verification, not one a scrape).
//!
//! [`Server::shutdown`] (or dropping the [`Server`]) stops accepting, drops
//! every open connection at once (a request being answered is cut; its
//! scraper sees an error and retries later), and joins the thread. It waits
//! only for a [`Source`] call in progress, hence the rule that those lock
//! briefly.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::io::{self, Read as _, Write as _};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{HeaderValue, ACCEPT, ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, Semaphore};

use crate::auth::{BasicAuth, Check};
use crate::os_reason::os_reason;

/// What the endpoint serves. Called from the server thread; implementations lock briefly.
pub trait Source: Send + Sync + 'static {
    /// The metrics body for a request's `Accept` header value (None when absent):
    /// returns (content_type, body bytes). The monitor implements content negotiation here
    /// (text format vs protobuf), so the server just passes Accept through.
    fn metrics(&self, accept: Option<&str>) -> (String, Vec<u8>);
    /// Whether the daemon is healthy (measuring threads alive, last checkpoint recent); the text explains.
    fn health(&self) -> (bool, String);
}

/// The bounds on what clients may cost the daemon; the module documentation
/// explains each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; those beyond are refused (503) and closed.
    /// 0 is taken as 1, since an endpoint that refuses everything is no use.
    pub max_connections: usize,
    /// Time from a connection's start by which its request head must have arrived.
    pub header_timeout: Duration,
    /// Total lifetime of a connection, reading the request and writing the answer.
    pub request_timeout: Duration,
    /// Largest request head (request line and headers) accepted, in bytes.
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            header_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
        }
    }
}

/// Who may read the endpoint, from the web configuration: TLS, basic
/// authentication, both or (the default) neither.
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub auth: Option<Arc<BasicAuth>>,
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        addr: SocketAddr,
        /// The OS's reason without its "(os error N)" tail, for one clean line.
        reason: String,
        #[source]
        source: io::Error,
    },
    /// The server thread could not be started or did not get to listening.
    #[error("cannot start the HTTP server thread: {0}")]
    Thread(String),
}

/// The running endpoint. [`Server::shutdown`] or dropping it stops the
/// server and joins its thread.
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    /// Read at each connection, so [`Server::set_access`] applies to the next.
    access: Arc<Mutex<Access>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// hyper's smallest allowed read buffer; a smaller one panics.
const MIN_BUF_SIZE: usize = 8192;

/// Pause after a failed accept (out of file descriptors, mostly): the failing
/// connection stays queued, so retrying at once would spin a CPU.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The answer to a connection beyond `max_connections`.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 41\r\n\
\r\n\
too many connections to latscope monitor\n";

impl Server {
    /// Binds `addr` (error if it cannot), spawns the server thread (named "latscope-http"), returns once listening.
    /// `on_thread_start` runs first in the new thread (the daemon passes a closure that sets CPU affinity).
    pub fn start(
        addr: SocketAddr,
        source: Arc<dyn Source>,
        limits: Limits,
        on_thread_start: Box<dyn FnOnce() + Send>,
    ) -> Result<Server, HttpError> {
        Server::start_with(addr, source, limits, Access::default(), on_thread_start)
    }

    /// [`Server::start`] with TLS and authentication as `access` says.
    pub fn start_with(
        addr: SocketAddr,
        source: Arc<dyn Source>,
        limits: Limits,
        access: Access,
        on_thread_start: Box<dyn FnOnce() + Send>,
    ) -> Result<Server, HttpError> {
        // Bound here rather than in the thread so that a taken port is an
        // error of this call, reported before anything is spawned.
        let listener = std::net::TcpListener::bind(addr).map_err(|source| HttpError::Listen {
            addr,
            reason: os_reason(&source),
            source,
        })?;
        let local_addr = listener.local_addr().map_err(|source| HttpError::Listen {
            addr,
            reason: os_reason(&source),
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| HttpError::Listen {
                addr,
                reason: os_reason(&source),
                source,
            })?;

        let access = Arc::new(Mutex::new(access));
        let (stop_tx, stop_rx) = oneshot::channel();
        let shared_access = Arc::clone(&access);
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
        let thread = std::thread::Builder::new()
            .name("latscope-http".into())
            .spawn(move || {
                on_thread_start();
                // The runtime is built here, after `on_thread_start`, so that
                // its allocations and its I/O driver belong to the pinned thread.
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    // For bcrypt verifications, one at a time (`Serving::authorised`).
                    .max_blocking_threads(1)
                    .enable_io()
                    .enable_time()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx
                            .send(Err(format!("cannot build its runtime: {}", os_reason(&e))));
                        return;
                    }
                };
                let listener = {
                    let _entered = runtime.enter();
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => {
                            let _ = ready_tx.send(Err(format!(
                                "cannot register the listening socket: {}",
                                os_reason(&e)
                            )));
                            return;
                        }
                    }
                };
                let _ = ready_tx.send(Ok(()));
                runtime.block_on(serve(listener, source, limits, shared_access, stop_rx));
                // Dropping the runtime here drops every connection task, so
                // open connections do not delay the shutdown; it waits only
                // for a bcrypt verification in progress (one at most).
            })
            .map_err(|e| HttpError::Thread(os_reason(&e)))?;

        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Server {
                local_addr,
                access,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(reason)) => {
                let _ = thread.join();
                Err(HttpError::Thread(reason))
            }
            // The sender went away unsent: `on_thread_start` panicked.
            Err(mpsc::RecvError) => {
                let _ = thread.join();
                Err(HttpError::Thread(
                    "it ended before listening (its start hook panicked)".into(),
                ))
            }
        }
    }

    /// The address listened on, with the actual port when `start` was given port 0.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The TLS and authentication connections get.
    pub fn access(&self) -> Access {
        self.access
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes the TLS and authentication for the connections accepted
    /// from now on (the daemon's SIGHUP, with a renewed certificate say).
    pub fn set_access(&self, access: Access) {
        *self.access.lock().unwrap_or_else(|p| p.into_inner()) = access;
    }

    /// Stops accepting, drops open connections and joins the server thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // An error means the server loop is gone already; joining is all that is left.
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panic in the thread has nothing left to clean up; the
            // daemon's health check reports the missing endpoint, not this.
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The accept loop, until `stop` fires or its sender is dropped.
async fn serve(
    listener: tokio::net::TcpListener,
    source: Arc<dyn Source>,
    limits: Limits,
    access: Arc<Mutex<Access>>,
    mut stop: oneshot::Receiver<()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(limits.max_header_bytes)
        .max_buf_size(limits.max_header_bytes.max(MIN_BUF_SIZE))
        .keep_alive(false);
    let verifying = Arc::new(Semaphore::new(1));

    loop {
        let accepted = tokio::select! {
            // Stop first: a flood of connections must not delay a shutdown.
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(_) => {
                tokio::select! {
                    biased;
                    _ = &mut stop => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                }
            }
        };
        let Access { tls, auth } = access.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let tls = tls.map(tokio_rustls::TlsAcceptor::from);
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            // A plain-text 503 is no answer to a TLS client: just closed.
            if tls.is_none() {
                refuse(stream);
            }
            continue;
        };
        // Answers are written whole and at once; Nagle would only delay the last segment.
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        let serving = Serving {
            source: Arc::clone(&source),
            auth,
            verifying: Arc::clone(&verifying),
        };
        tokio::spawn(async move {
            // A timed-out connection is dropped, which closes it. Its error,
            // like any connection error, concerns that client alone.
            let _ = tokio::time::timeout(limits.request_timeout, async move {
                match tls {
                    None => connection(&builder, stream, serving).await,
                    Some(tls) => {
                        // A failed handshake (plain HTTP, say) closes the connection.
                        let handshake =
                            tokio::time::timeout(limits.header_timeout, tls.accept(stream));
                        if let Ok(Ok(stream)) = handshake.await {
                            connection(&builder, stream, serving).await;
                        }
                    }
                }
            })
            .await;
            drop(slot);
        });
    }
}

/// What every connection's requests are answered from.
#[derive(Clone)]
struct Serving {
    source: Arc<dyn Source>,
    auth: Option<Arc<BasicAuth>>,
    /// One bcrypt verification at a time: they are slow on purpose, and
    /// those waiting are bounded by the connections.
    verifying: Arc<Semaphore>,
}

/// Serves the one request of a connection, plain or TLS.
async fn connection<I>(builder: &http1::Builder, io: I, serving: Serving)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let serving = serving.clone();
        async move { Ok::<_, Infallible>(serving.answer(request).await) }
    });
    let _ = builder.serve_connection(TokioIo::new(io), service).await;
}

impl Serving {
    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        if let Some(auth) = &self.auth {
            if !self.authorised(auth, &request).await {
                let mut response = text(StatusCode::UNAUTHORIZED, "unauthorized\n");
                response
                    .headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
                return response;
            }
        }
        respond(self.source.as_ref(), &request)
    }

    /// Whether the request's credentials are a user's.
    async fn authorised(&self, auth: &Arc<BasicAuth>, request: &Request<Incoming>) -> bool {
        let header = request
            .headers()
            .get(AUTHORIZATION)
            .map(HeaderValue::as_bytes);
        match auth.check(header) {
            Check::Done(ok) => ok,
            Check::Verify(credentials) => {
                let Ok(permit) = Arc::clone(&self.verifying).acquire_owned().await else {
                    return false;
                };
                let auth = Arc::clone(auth);
                tokio::task::spawn_blocking(move || {
                    let ok = auth.verify(credentials);
                    drop(permit);
                    ok
                })
                .await
                .unwrap_or(false)
            }
        }
    }
}

/// Closes a connection beyond `max_connections`, telling the client why when
/// that costs nothing.
fn refuse(stream: tokio::net::TcpStream) {
    // Done synchronously on the plain socket: a task would hold the socket
    // open, which is what the bound is for. The socket is non-blocking, and a
    // fresh socket's send buffer is empty, so the write cannot block.
    let Ok(mut stream) = stream.into_std() else {
        return;
    };
    // Reading what request bytes already came avoids closing with unread
    // data, which would send a reset that can discard the 503 at the client.
    let mut scratch = [0u8; 4096];
    let _ = stream.read(&mut scratch);
    let _ = stream.write(REFUSED);
}

fn respond(source: &dyn Source, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let method = request.method();
    let route = match request.uri().path() {
        "/metrics" => Route::Metrics,
        "/healthz" => Route::Health,
        _ => {
            return text(
                StatusCode::NOT_FOUND,
                "not found; this endpoint serves /metrics and /healthz\n",
            )
        }
    };
    if method != Method::GET && method != Method::HEAD {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed; this endpoint is read-only: GET or HEAD\n",
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    // A GET with a body is meaningless here; refusing it keeps the server
    // from ever reading one.
    if !request.body().is_end_stream() {
        return text(
            StatusCode::BAD_REQUEST,
            "bad request: a request body is not accepted\n",
        );
    }
    // hyper sends HEAD answers with the body's length and without the body.
    match route {
        Route::Metrics => {
            let accept = accept_header(request);
            let (content_type, body) = source.metrics(accept.as_deref());
            let Ok(content_type) = HeaderValue::try_from(content_type) else {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error: the metrics content type is not a valid header value\n",
                );
            };
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(CONTENT_TYPE, content_type);
            response
        }
        Route::Health => {
            let (healthy, why) = source.health();
            let (status, mut body) = if healthy {
                (StatusCode::OK, String::from("ok"))
            } else {
                (StatusCode::SERVICE_UNAVAILABLE, String::from("unhealthy"))
            };
            if !why.is_empty() {
                let _ = write!(body, " {why}");
            }
            body.push('\n');
            text(status, body)
        }
    }
}

enum Route {
    Metrics,
    Health,
}

/// The `Accept` value for the source: several `Accept` fields mean the same
/// as one with their values joined by commas (RFC 9110 5.3). A value that is
/// not visible ASCII is dropped, so the source falls back to its default format.
fn accept_header(request: &Request<Incoming>) -> Option<String> {
    let mut joined: Option<String> = None;
    for value in request.headers().get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        match &mut joined {
            None => joined = Some(value.to_owned()),
            Some(joined) => {
                joined.push_str(", ");
                joined.push_str(value);
            }
        }
    }
    joined
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.into())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
