//! The guest side: smoltcp TCP sockets on port 6379, one RESP parser and
//! output buffer per connection, one command engine for all.

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;
use kvstore::aof::{self, AppendFsync};
use kvstore::commands::{ClientCtx, Engine};
use kvstore::config::Config;
use kvstore::resp::Parser;

use crate::disklog::DiskLog;
use libos::net::smoltcp::iface::SocketHandle;
use libos::net::smoltcp::socket::tcp;
use libos::println;

libos::main!(main);

/// Port the server listens on.
const PORT: u16 = 6379;
/// Connections served at once.
const CONNECTIONS: usize = 128;
/// Socket buffer sizes (room for pipelined clients).
const SOCKET_BUFFER: usize = 16 * 1024;
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
    libos::time::unix_time_ms()
}

/// `appendfsync always|everysec|no` from the arguments (default everysec).
fn fsync_policy(args: &libos::Args) -> Result<AppendFsync, ()> {
    let items: Vec<&str> = args.iter().collect();
    match items.iter().position(|a| *a == "appendfsync") {
        None => Ok(AppendFsync::EverySec),
        Some(i) => items
            .get(i + 1)
            .and_then(|p| AppendFsync::parse(p.as_bytes()))
            .ok_or(()),
    }
}

fn main(args: libos::Args) -> i32 {
    let Ok(fsync) = fsync_policy(&args) else {
        println!("usage: kvstore [appendfsync always|everysec|no]");
        return 2;
    };
    let mut net = match libos::net::init() {
        Ok(net) => net,
        Err(e) => {
            println!("kvstore: no network: {e:?}");
            return 1;
        }
    };
    let mut config = Config::default();
    config.appendfsync = fsync;
    let mut engine = Engine::new(config.clone(), now_ms());
    let mut log = match libos::dma::nvme() {
        Ok((nvme, info)) => {
            let now = now_ms();
            let opened = DiskLog::open(nvme, info, fsync, |cmd| {
                if let Err(e) = engine.load(&cmd, now) {
                    println!("kvstore: log record not replayable: {e:?}");
                }
            });
            match opened {
                Ok((log, opened)) => {
                    if let Some(cut) = opened.cut {
                        println!("kvstore: {cut}");
                    }
                    println!(
                        "kvstore: log replayed: {} records, {} bytes, {} keys",
                        opened.records,
                        opened.bytes,
                        engine.store().len()
                    );
                    Some(log)
                }
                Err(e) => {
                    println!("kvstore: cannot open the log on NVMe: {e}; persistence is off");
                    None
                }
            }
        }
        Err(e) => {
            println!("kvstore: no NVMe disk ({e:?}); persistence is off");
            None
        }
    };
    let mut next_id = 1;
    let mut conns: Vec<Connection> = (0..CONNECTIONS)
        .map(|_| {
            let socket = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; SOCKET_BUFFER]),
                tcp::SocketBuffer::new(vec![0; SOCKET_BUFFER]),
            );
            let mut socket = socket;
            // Listening before "ready" is printed: a SYN that finds no
            // listener is answered with a reset.
            let _ = socket.listen(PORT);
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
    let mut record = Vec::new();
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
                            if let Some(log) = log.as_mut() {
                                for effect in &outcome.effects {
                                    record.clear();
                                    aof::encode_record_into(effect, &mut record);
                                    log.append(&record);
                                }
                            }
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
        }
        // Replies to writes leave only once the log holds them (appendfsync
        // always), so no acknowledged write can be lost.
        if let Some(l) = log.as_mut() {
            if l.flush_due() {
                if let Err(e) = l.flush() {
                    println!("kvstore: log write failed: {e}; persistence is off");
                    log = None;
                }
                engine.stats_mut().aof_current_size = log.as_ref().map_or(0, |l| l.durable_bytes());
            }
        }
        for c in conns.iter_mut() {
            let socket = net.sockets.get_mut::<tcp::Socket>(c.handle);
            if !c.open {
                continue;
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
