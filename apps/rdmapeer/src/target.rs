//! `verbs-target`: the Faultline end of `verbs_probe`, our own small
//! libibverbs program on the Linux side (`image/linux-rxe/verbs_probe.c`),
//! which checks what no stock tool checks: faults on this node during a
//! Linux WRITE or READ, refused keys, and this node WRITEing and READing
//! Linux memory.
//!
//! ```text
//!  verbs_probe (Linux)                         verbs-target (here)
//!  qp QPN PSN ADDR MTU ──── TCP 18515 ───────▶ new PeerQp, connected; answers ours
//!  expose NAME LEN r|w|rw fresh|SEED ────────▶ a region, never touched (fresh) or
//!                                              filled with pattern SEED; its key
//!  WRITE/READ over RoCEv2 ═══════════════════▶ faults: RNR NAK, resolve, go on
//!  check NAME OFF LEN zero|SEED ─────────────▶ every byte compared here
//!  revoke NAME / faults / write… / read… ────▶ …
//!  bye ──────────────────────────────────────▶ the step ends
//! ```
//!
//! One command line each way; every answer is one line.

use crate::tcp::{Oob, TcpError};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;
use libos::dma::Policy;
use libos::mm::Region;
use libos::rdma::{Access, ExposedRegion, PeerAddress, PeerQp, QueuePair, Rdma, RemoteAddr};

/// How long the probe may stay silent.
const SILENCE: Duration = Duration::from_secs(120);
/// The largest region or transfer a command may ask for.
const MAX_LEN: usize = 16 << 20;

/// Byte `i` of pattern `seed`, as `verbs_probe.c` computes it (never 0).
pub fn pattern(i: usize, seed: u8) -> u8 {
    ((i as u64 * 7 + (i as u64 >> 8) * 131 + u64::from(seed)) as u8) | 1
}

/// A region the probe asked for: exposed, or revoked (kept, so `check`
/// can tell that a WRITE after the revocation left it alone).
enum Exposed {
    Exposed(ExposedRegion),
    Revoked(Region),
}

/// What the step holds between commands.
struct Target<'r> {
    rdma: &'r Rdma,
    qp: Option<(PeerQp, QueuePair)>,
    exposed: BTreeMap<String, Exposed>,
}

/// Serves one probe run; `Ok(commands)` when it said `bye`.
pub fn serve(rdma: &Rdma, oob: &mut Oob) -> Result<u32, String> {
    let mut conn = oob
        .accept(SILENCE * 3)
        .map_err(|e| format!("accept: {e:?}"))?;
    let mut t = Target {
        rdma,
        qp: None,
        exposed: BTreeMap::new(),
    };
    let mut count = 0;
    loop {
        let line = conn
            .read_line(512, SILENCE)
            .map_err(|e: TcpError| format!("reading a command: {e:?}"))?;
        let line = String::from_utf8_lossy(&line).into_owned();
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        count += 1;
        let (answer, done) = match t.command(&words) {
            Ok(a) => (a, words.first() == Some(&"bye")),
            Err(e) => (format!("error {e}"), false),
        };
        conn.write_all(format!("{answer}\n").as_bytes(), SILENCE)
            .map_err(|e| format!("answering: {e:?}"))?;
        if done {
            return Ok(count);
        }
    }
}

fn num<T: core::str::FromStr>(w: Option<&&str>) -> Result<T, String> {
    w.and_then(|s| s.parse().ok())
        .ok_or_else(|| String::from("a number is missing or malformed"))
}

fn ipv4(text: &str) -> Result<[u8; 4], String> {
    let mut a = [0u8; 4];
    let mut parts = text.split('.');
    for o in a.iter_mut() {
        *o = parts
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("{text}: not an IPv4 address"))?;
    }
    Ok(a)
}

fn length(w: Option<&&str>) -> Result<usize, String> {
    let len: usize = num(w)?;
    if len == 0 || len > MAX_LEN {
        return Err(format!("lengths are 1 to {MAX_LEN}"));
    }
    Ok(len)
}

impl Target<'_> {
    fn command(&mut self, w: &[&str]) -> Result<String, String> {
        match w.first().copied() {
            Some("qp") => self.new_qp(w),
            Some("expose") => self.expose(w),
            Some("revoke") => {
                let name = w.get(1).ok_or("revoke NAME")?;
                // Dropping the exposure revokes its key; the memory stays,
                // so `check` can tell that a later WRITE left it alone.
                let e = self
                    .exposed
                    .remove(*name)
                    .ok_or_else(|| format!("no exposure {name}"))?;
                let region = match e {
                    Exposed::Exposed(x) => x.revoke(),
                    Exposed::Revoked(r) => r,
                };
                self.exposed
                    .insert(String::from(*name), Exposed::Revoked(region));
                Ok(String::from("ok"))
            }
            Some("check") => self.check(w),
            Some("faults") => Ok(format!("faults {}", self.rdma.pages_ready())),
            Some("write") => self.write(w),
            Some("read") => self.read(w),
            Some("bye") => Ok(String::from("bye")),
            _ => Err(format!("unknown command {:?}", w.first())),
        }
    }

    /// `qp QPN PSN ADDR MTU`: a fresh queue pair with the probe's fresh one.
    fn new_qp(&mut self, w: &[&str]) -> Result<String, String> {
        // The old pair is dead after a refused request: end ours first.
        self.qp = None;
        let peer = PeerAddress {
            qpn: num(w.get(1))?,
            psn: num(w.get(2))?,
            addr: ipv4(w.get(3).ok_or("qp QPN PSN ADDR MTU")?)?,
            mtu: num(w.get(4))?,
        };
        let qp = self.rdma.create_peer_qp().map_err(|e| format!("{e:?}"))?;
        let to = qp.connect(&peer).map_err(|e| format!("{e:?}"))?;
        let a = self.rdma.address();
        let answer = format!(
            "qp {} {} {}.{}.{}.{}",
            qp.qpn(),
            qp.first_psn(),
            a[0],
            a[1],
            a[2],
            a[3]
        );
        self.qp = Some((qp, to));
        Ok(answer)
    }

    /// `expose NAME LEN r|w|rw fresh|SEED`.
    fn expose(&mut self, w: &[&str]) -> Result<String, String> {
        let name = String::from(*w.get(1).ok_or("expose NAME LEN RIGHTS FILL")?);
        let len = length(w.get(2))?;
        let access = match w.get(3).copied() {
            Some("r") => Access::REMOTE_READ,
            Some("w") => Access::REMOTE_WRITE,
            Some("rw") => Access::REMOTE_READ | Access::REMOTE_WRITE,
            _ => return Err("rights are r, w or rw".into()),
        };
        let mut region = Region::demand_zero(len).map_err(|e| format!("{e:?}"))?;
        match w.get(4).copied() {
            Some("fresh") => {}
            seed => {
                let seed: u8 = num(seed.as_ref())?;
                for (i, b) in region.as_mut_slice().iter_mut().enumerate() {
                    *b = pattern(i, seed);
                }
            }
        }
        let resident = region.resident_pages();
        let exposed = self
            .rdma
            .expose_region(region, access)
            .map_err(|(e, _)| format!("{e:?}"))?;
        let r = exposed.remote();
        let answer = format!("key {} {} {} {resident}", r.key, r.start, r.len);
        self.exposed.insert(name, Exposed::Exposed(exposed));
        Ok(answer)
    }

    /// `check NAME OFF LEN zero|SEED`: the LEN bytes at OFF are zero, or
    /// pattern SEED counted from OFF (a region filled by `expose` holds
    /// the pattern counted from its start: check it from 0).
    fn check(&self, w: &[&str]) -> Result<String, String> {
        let name = w.get(1).ok_or("check NAME OFF LEN WHAT")?;
        let e = self
            .exposed
            .get(*name)
            .ok_or_else(|| format!("no exposure {name}"))?;
        let off: usize = num(w.get(2))?;
        let len = length(w.get(3))?;
        let range = off..off.saturating_add(len);
        // An exposed region is copied out byte by byte (a peer could be
        // writing it); a revoked one is read in place.
        let (bytes, resident) = match e {
            Exposed::Exposed(x) => (x.snapshot(range), x.resident_pages()),
            Exposed::Revoked(r) => (
                r.as_slice().get(range).map(<[u8]>::to_vec),
                r.resident_pages(),
            ),
        };
        let bytes = bytes.ok_or("outside the region")?;
        let seed = match w.get(4).copied() {
            Some("zero") => None,
            s => Some(num::<u8>(s.as_ref())?),
        };
        let wrong = bytes
            .iter()
            .enumerate()
            .find(|&(i, &b)| b != seed.map_or(0, |s| pattern(i, s)));
        Ok(match wrong {
            None => format!("ok {resident}"),
            Some((i, &b)) => format!("bad {} {b:#04x}", off + i),
        })
    }

    fn remote(&self, w: &[&str]) -> Result<(&QueuePair, RemoteAddr, usize, u8), String> {
        let (_, to) = self.qp.as_ref().ok_or("no queue pair yet (qp first)")?;
        let key: u64 = num(w.get(1))?;
        let va: usize = num(w.get(2))?;
        let len = length(w.get(3))?;
        let seed: u8 = num(w.get(4))?;
        Ok((to, RemoteAddr { key, va }, len, seed))
    }

    /// `write RKEY VA LEN SEED`: WRITE pattern SEED into the Linux memory.
    fn write(&self, w: &[&str]) -> Result<String, String> {
        let (to, remote, len, seed) = self.remote(w)?;
        let src: Vec<u8> = (0..len).map(|i| pattern(i, seed)).collect();
        let wc = to
            .write_from(&src, remote, Policy::FaultAware)
            .map_err(|e| format!("{e:?}"))?;
        Ok(format!("status {:?}", wc.status))
    }

    /// `read RKEY VA LEN SEED`: READ the Linux memory, which must hold
    /// pattern SEED.
    fn read(&self, w: &[&str]) -> Result<String, String> {
        let (to, remote, len, seed) = self.remote(w)?;
        let mut dst = vec![0u8; len];
        let wc = to
            .read_into(&mut dst, remote, Policy::FaultAware)
            .map_err(|e| format!("{e:?}"))?;
        if wc.status != libos::rdma::Status::Success {
            return Ok(format!("status {:?}", wc.status));
        }
        Ok(
            match dst
                .iter()
                .enumerate()
                .find(|&(i, &b)| b != pattern(i, seed))
            {
                None => format!("status {:?}", wc.status),
                Some((i, &b)) => format!("bad {i} {b:#04x}"),
            },
        )
    }
}
