//! `PFDEBUG` and `PFSELFTEST`. `PFDEBUG` is Redis's command for looking
//! inside a HyperLogLog value
//! (its registers, its encoding, its sparse opcodes) and turning it
//! dense. kvstore keeps Redis's very bytes (see `kvstore::hll`), so it
//! answers as Redis does; a conversion is logged as the `SET` of the new
//! bytes.

use alloc::vec::Vec;

use super::exec::Exec;
use super::hyperloglog::{corrupt, log_value, not_hll};
use crate::config::Config;
use crate::hll::{self, Encoding};
use crate::resp::Reply;
use crate::store::Store;

/// `PFDEBUG GETREG|DECODE|ENCODING|TODENSE key`.
pub(crate) fn pfdebug(x: &mut Exec<'_>, args: &mut [Vec<u8>]) -> Reply {
    let key = &args[2];
    let encoding = match x.live_string(key) {
        Ok(None) => return Reply::error("ERR The specified key does not exist"),
        Ok(Some(value)) => match hll::encoding(value) {
            Some(encoding) => encoding,
            None => return not_hll(),
        },
        Err(reply) => return reply,
    };
    let value = x.store.get(key).map_or(&[][..], |e| e.value());
    match args[1].to_ascii_lowercase().as_slice() {
        b"getreg" => match hll::registers(value) {
            Ok(registers) => {
                if encoding == Encoding::Sparse && !to_dense(x, key) {
                    return corrupt();
                }
                Reply::array(
                    registers
                        .into_iter()
                        .map(|r| Reply::Integer(r.into()))
                        .collect(),
                )
            }
            Err(_) => corrupt(),
        },
        b"decode" if encoding == Encoding::Dense => Reply::error("ERR HLL encoding is not sparse"),
        b"decode" => match hll::decode_sparse(value) {
            Ok(text) => Reply::bulk(text.into_bytes()),
            Err(_) => corrupt(),
        },
        b"encoding" => Reply::Simple(
            match encoding {
                Encoding::Dense => "dense",
                Encoding::Sparse => "sparse",
            }
            .into(),
        ),
        b"todense" if encoding == Encoding::Dense => Reply::Integer(0),
        b"todense" => match to_dense(x, key) {
            true => Reply::Integer(1),
            false => corrupt(),
        },
        _ => Reply::Error(alloc::format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            super::errors::c_string(&args[1])
        )),
    }
}

/// `PFSELFTEST`: Redis's self-check of the HyperLogLog code (see
/// `kvstore::hll::self_test`), with Redis's sizes: `+OK`, or
/// `-TESTFAILED` and what failed. It takes a while (ten million
/// elements), as in Redis.
pub(crate) fn pfselftest(x: &mut Exec<'_>, _args: &mut [Vec<u8>]) -> Reply {
    let sparse_max = x.config.hll_sparse_max_bytes;
    let mut random = || x.next_random();
    match hll::self_test(&mut random, 1000, 10_000_000, sparse_max) {
        Ok(()) => Reply::ok(),
        Err(what) => Reply::Error(alloc::format!("TESTFAILED {what}")),
    }
}

/// Turns the sparse HyperLogLog at `key` dense and logs the new bytes;
/// false (changing nothing) if it is corrupt.
fn to_dense(x: &mut Exec<'_>, key: &[u8]) -> bool {
    let converted = x.store.update_string(key, |value| {
        let mut dense = value.clone();
        let ok = hll::to_dense(&mut dense).is_ok();
        if ok {
            *value = dense;
        }
        ok
    });
    if converted != Some(true) {
        return false;
    }
    log_value(x, key);
    true
}

/// Growth of `PFDEBUG sub key`: at most a dense HyperLogLog.
pub(crate) fn pfdebug_growth(store: &Store, _limits: &Config, args: &[Vec<u8>]) -> usize {
    store
        .get(&args[2])
        .map_or(0, |e| hll::DENSE_SIZE.saturating_sub(e.value().len()))
}
