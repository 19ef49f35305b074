//! A TCP gate in front of the API server, for one client: it forwards bytes both ways (TLS passes
//! through untouched) until [`Gate::cut`], which is a network cut as a client sees one: nothing is
//! refused or reset, every connection (open or new) just stops answering, so requests hang until
//! the client's own timeouts. [`Gate::restore`] heals it as a network heals: what was held is
//! delivered then, on the same connections (a request its client gave up on meanwhile arrives
//! late, as a retransmitted one would).
//!
//! It runs on a thread and runtime of its own, so a test's blocking calls never stall it.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// A running gate; stopped (every connection closed) when dropped.
#[derive(Debug)]
pub struct Gate {
    port: u16,
    open: Arc<watch::Sender<bool>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Gate {
    /// A gate on a free loopback port, forwarding to 127.0.0.1:`target`.
    pub fn start(target: u16) -> Result<Gate, String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("gate: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let (open, opened) = watch::channel(true);
        let (stop, stopped) = oneshot::channel();
        std::thread::Builder::new()
            .name(format!("gate-{port}"))
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                    return;
                };
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        () = serve(listener, target, opened) => {}
                        _ = stopped => {}
                    }
                });
            })
            .map_err(|e| format!("gate thread: {e}"))?;
        Ok(Gate {
            port,
            open: Arc::new(open),
            stop: Some(stop),
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Cuts the client off: nothing passes, nothing is refused.
    pub fn cut(&self) {
        self.open.send_replace(false);
    }

    /// Forwards again, starting with what was held.
    pub fn restore(&self) {
        self.open.send_replace(true);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve(listener: TcpListener, target: u16, open: watch::Receiver<bool>) {
    while let Ok((client, _)) = listener.accept().await {
        tokio::spawn(pipe(client, target, open.clone()));
    }
}

/// Forwards one connection both ways, holding everything while the gate is cut.
async fn pipe(client: TcpStream, target: u16, mut open: watch::Receiver<bool>) {
    if open.wait_for(|open| *open).await.is_err() {
        return;
    }
    let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::join!(
        forward(client_read, server_write, open.clone()),
        forward(server_read, client_write, open)
    );
}

/// Copies `from` to `to` while the gate is open; while it is cut, neither reads nor writes.
async fn forward(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut open: watch::Receiver<bool>) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        if open.wait_for(|open| *open).await.is_err() {
            return;
        }
        let read = tokio::select! {
            read = from.read(&mut buffer) => read,
            // Cut while waiting to read (reading is cancel-safe): hold.
            _ = open.wait_for(|open| !*open) => continue,
        };
        let n = match read {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        if open.wait_for(|open| *open).await.is_err() || to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
