//! The guest side: smoltcp TCP sockets on port 6379, one RESP parser and
//! output buffer per connection, one command engine for all.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;
use kvstore::commands::{ClientCtx, Engine};
use kvstore::config::Config;
use kvstore::resp::Parser;
use libos::net::smoltcp::iface::SocketHandle;
use libos::net::smoltcp::socket::tcp;
use libos::println;

libos::main!(main);

/// Port the server listens on.
const PORT: u16 = 6379;
/// Connections served at once.
const CONNECTIONS: usize = 64;
/// Socket buffer sizes (pipelined clients need room).
const SOCKET_BUFFER: usize = 64 * 1024;
/// Output kept per connection before the server stops reading from it.
const OUTPUT_LIMIT: usize = 1 << 20;

struct Connection {
    handle: SocketHandle,
    parser: Parser,
    client: ClientCtx,
    output: Vec<u8>,
    open: bool,
    closing: bool,
}

fn now_ms() -> u64 {
    libos::time::uptime().as_millis() as u64
}

fn main(_args: libos::Args) -> i32 {
    let mut net = match libos::net::init() {
        Ok(net) => net,
        Err(e) => {
            println!("kvstore: no network: {e:?}");
            return 1;
        }
    };
    let config = Config::default();
    let mut engine = Engine::new(config.clone(), now_ms());
    let mut next_id = 1;
    let mut conns: Vec<Connection> = (0..CONNECTIONS)
        .map(|_| {
            let socket = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; SOCKET_BUFFER]),
                tcp::SocketBuffer::new(vec![0; SOCKET_BUFFER]),
            );
            let handle = net.sockets.add(socket);
            Connection {
                handle,
                parser: Parser::with_limits(config.parser_limits()),
                client: ClientCtx::new(0),
                output: Vec::new(),
                open: false,
                closing: false,
            }
        })
        .collect();
    println!(
        "kvstore: ready on port {PORT} ({} ms after boot)",
        libos::time::uptime().as_millis()
    );
    loop {
        net.poll();
        let mut busy = false;
        for c in conns.iter_mut() {
            let socket = net.sockets.get_mut::<tcp::Socket>(c.handle);
            if !socket.is_open() {
                if c.open {
                    c.open = false;
                    engine.stats_mut().connected_clients -= 1;
                }
                c.parser = Parser::with_limits(config.parser_limits());
                c.output.clear();
                c.closing = false;
                let _ = socket.listen(PORT);
                continue;
            }
            if !c.open && socket.is_active() {
                c.open = true;
                c.client = ClientCtx::new(next_id);
                next_id += 1;
                let stats = engine.stats_mut();
                stats.connected_clients += 1;
                stats.total_connections_received += 1;
                socket.set_nagle_enabled(false);
                socket.set_ack_delay(None);
            }
            if c.output.len() < OUTPUT_LIMIT && !c.closing && socket.can_recv() {
                let _ = socket.recv(|data| {
                    c.parser.feed(data);
                    (data.len(), ())
                });
                loop {
                    match c.parser.next_command() {
                        Ok(Some(args)) => {
                            let outcome = engine.execute(&args, &mut c.client, now_ms());
                            outcome.reply.encode(&mut c.output);
                            if c.client.should_close() {
                                c.closing = true;
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            e.to_reply().encode(&mut c.output);
                            c.closing = true;
                            break;
                        }
                    }
                }
                busy = true;
            }
            if !c.output.is_empty() && socket.can_send() {
                if let Ok(sent) = socket.send_slice(&c.output) {
                    c.output.drain(..sent);
                    busy = true;
                }
            }
            if c.closing && c.output.is_empty() {
                socket.close();
            }
        }
        if !busy {
            libos::time::wait_for_interrupt_or(Duration::from_millis(1));
        }
    }
}
