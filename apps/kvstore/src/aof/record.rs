//! The log's byte format, and replaying it.
//!
//! ```text
//! header:  "FLKVAOF\0"  u32 version            (12 bytes)
//! record:  u32 len  u32 crc32c(payload)  payload[len]
//! payload: the command as a RESP array of bulk strings
//! ```
//!
//! Integers are little-endian. A crash can leave the last record half
//! written, and storage can flip bits; [`replay`] applies every intact
//! record and reports where the first bad one starts so the server can
//! truncate there and carry on.

use alloc::vec::Vec;

use super::crc32c;
use crate::resp::{decode_command, encode_command};
use crate::Args;

/// The first bytes of every log file.
pub const MAGIC: [u8; 8] = *b"FLKVAOF\0";

/// The format version written after [`MAGIC`].
pub const VERSION: u32 = 1;

/// The file header: [`MAGIC`] then [`VERSION`]. A new log starts with it.
pub const HEADER: [u8; 12] = {
    let mut header = [0u8; 12];
    let mut i = 0;
    while i < 8 {
        header[i] = MAGIC[i];
        i += 1;
    }
    let version = VERSION.to_le_bytes();
    while i < 12 {
        header[i] = version[i - 8];
        i += 1;
    }
    header
};

/// Bytes before each payload: length and checksum.
const RECORD_HEADER: usize = 8;

/// One command as a log record, ready to append after [`HEADER`].
///
/// Panics if the encoded command exceeds 4 GiB, which the record format
/// cannot express (a single request that large is refused long before by
/// the parser's limits in any sane configuration).
pub fn encode_record<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_record_into(args, &mut out);
    out
}

/// Like [`encode_record`], appending to `out` (to batch several records
/// into one write).
pub fn encode_record_into<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    // Room for the whole record at once: `*n` and each `$len` line take at
    // most 24 bytes (20 digits and the marks).
    let most = args.iter().map(|a| a.as_ref().len() + 24).sum::<usize>();
    out.reserve(RECORD_HEADER + 24 + most);
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_HEADER]);
    encode_command(args, out);
    let payload = &out[start + RECORD_HEADER..];
    let len = u32::try_from(payload.len()).expect("log record over 4 GiB");
    let crc = crc32c(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// What [`replay`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayReport {
    /// Records applied.
    pub records: u64,
    /// Length of the intact prefix (header plus whole, valid records): the
    /// size to truncate the log to before appending again.
    pub valid_bytes: usize,
    /// Where and why replay stopped early; `None` if the whole log is good.
    pub torn_tail: Option<TailError>,
}

/// The first bad spot in a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailError {
    /// Byte offset of the bad header or record (equals `valid_bytes`).
    pub offset: usize,
    /// What is wrong there.
    pub reason: TailReason,
}

/// Why replay stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailReason {
    /// The file is shorter than the 12-byte header.
    TruncatedHeader,
    /// The file does not start with [`MAGIC`]: not a log of ours. Truncating
    /// would destroy someone else's data; the server should refuse to start.
    BadMagic,
    /// A format version this code does not read.
    UnsupportedVersion(u32),
    /// Fewer than 8 bytes left for a record's length and checksum.
    TruncatedRecordHeader,
    /// The record claims more payload bytes than remain.
    TruncatedPayload,
    /// The payload does not match its checksum.
    ChecksumMismatch,
    /// The checksum matches but the payload is not a RESP command.
    MalformedPayload,
}

/// Calls `apply` with each intact record's command, in order, stopping at
/// the first incomplete or corrupt one. An empty input is a valid empty log
/// (the server then writes [`HEADER`]).
///
/// ```
/// use kvstore::aof::{encode_record, replay, HEADER};
///
/// let mut log = HEADER.to_vec();
/// log.extend(encode_record(&["SET", "k", "v"]));
/// log.extend(&encode_record(&["DEL", "k"])[..5]); // torn by a crash
/// let mut seen = Vec::new();
/// let report = replay(&log, |args| seen.push(args));
/// assert_eq!(seen, [vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]]);
/// assert_eq!(report.records, 1);
/// assert_eq!(report.valid_bytes, log.len() - 5);
/// assert!(report.torn_tail.is_some());
/// ```
pub fn replay<F: FnMut(Args)>(bytes: &[u8], mut apply: F) -> ReplayReport {
    let mut report = ReplayReport {
        records: 0,
        valid_bytes: 0,
        torn_tail: None,
    };
    let stop = |report: &mut ReplayReport, reason| {
        report.torn_tail = Some(TailError {
            offset: report.valid_bytes,
            reason,
        });
    };
    if bytes.is_empty() {
        return report;
    }
    if let Err(reason) = check_header(bytes) {
        stop(&mut report, reason);
        return report;
    }
    report.valid_bytes = HEADER.len();
    while report.valid_bytes < bytes.len() {
        match read_record(&bytes[report.valid_bytes..]) {
            Ok((args, len)) => {
                apply(args);
                report.records += 1;
                report.valid_bytes += len;
            }
            Err(reason) => {
                stop(&mut report, reason);
                break;
            }
        }
    }
    report
}

fn check_header(bytes: &[u8]) -> Result<(), TailReason> {
    let magic_len = MAGIC.len().min(bytes.len());
    if bytes[..magic_len] != MAGIC[..magic_len] {
        return Err(TailReason::BadMagic);
    }
    let Some(version) = bytes.get(8..12) else {
        return Err(TailReason::TruncatedHeader);
    };
    let version = u32::from_le_bytes(version.try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(TailReason::UnsupportedVersion(version));
    }
    Ok(())
}

/// Decodes the record at the start of `bytes`: its command and total size.
fn read_record(bytes: &[u8]) -> Result<(Args, usize), TailReason> {
    let header = bytes
        .get(..RECORD_HEADER)
        .ok_or(TailReason::TruncatedRecordHeader)?;
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    let payload = bytes
        .get(RECORD_HEADER..RECORD_HEADER.saturating_add(len))
        .ok_or(TailReason::TruncatedPayload)?;
    if crc32c(payload) != crc {
        return Err(TailReason::ChecksumMismatch);
    }
    let args = decode_command(payload).ok_or(TailReason::MalformedPayload)?;
    Ok((args, RECORD_HEADER + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn args(list: &[&str]) -> Args {
        list.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    fn sample() -> (Vec<u8>, Vec<Args>, Vec<usize>) {
        let commands = vec![
            args(&["SET", "a", "1"]),
            vec![b"SET".to_vec(), b"bin\r\n\0".to_vec(), vec![0xff; 300]],
            args(&["DEL", "a"]),
            args(&["PEXPIREAT", "bin\r\n\0", "123456"]),
        ];
        let mut log = HEADER.to_vec();
        let mut boundaries = vec![log.len()];
        for cmd in &commands {
            log.extend(encode_record(cmd));
            boundaries.push(log.len());
        }
        (log, commands, boundaries)
    }

    fn replay_all(log: &[u8]) -> (Vec<Args>, ReplayReport) {
        let mut seen = Vec::new();
        let report = replay(log, |cmd| seen.push(cmd));
        (seen, report)
    }

    #[test]
    fn roundtrip() {
        let (log, commands, _) = sample();
        let (seen, report) = replay_all(&log);
        assert_eq!(seen, commands);
        assert_eq!(
            report,
            ReplayReport {
                records: 4,
                valid_bytes: log.len(),
                torn_tail: None
            }
        );
    }

    #[test]
    fn empty_log_is_valid_and_header_only_is_valid() {
        assert_eq!(replay_all(&[]).1.torn_tail, None);
        let (seen, report) = replay_all(&HEADER);
        assert!(seen.is_empty());
        assert_eq!(report.valid_bytes, HEADER.len());
        assert_eq!(report.torn_tail, None);
    }

    #[test]
    fn torn_tail_at_every_truncation_point() {
        let (log, commands, boundaries) = sample();
        for cut in 1..log.len() {
            let (seen, report) = replay_all(&log[..cut]);
            // Records wholly inside the cut survive; nothing else does.
            let whole = boundaries.iter().filter(|&&b| b <= cut).count();
            if cut < HEADER.len() {
                assert_eq!(whole, 0);
                assert_eq!(report.valid_bytes, 0);
                assert_eq!(
                    report.torn_tail.map(|t| t.reason),
                    Some(TailReason::TruncatedHeader),
                    "cut {cut}"
                );
                continue;
            }
            let records = whole - 1;
            assert_eq!(seen, commands[..records], "cut {cut}");
            assert_eq!(report.records, records as u64);
            assert_eq!(report.valid_bytes, boundaries[records]);
            if boundaries.contains(&cut) {
                assert_eq!(report.torn_tail, None, "cut {cut} is a boundary");
            } else {
                let tail = report.torn_tail.expect("torn");
                assert_eq!(tail.offset, boundaries[records]);
                let into_record = cut - boundaries[records];
                let expected = if into_record < RECORD_HEADER {
                    TailReason::TruncatedRecordHeader
                } else {
                    TailReason::TruncatedPayload
                };
                assert_eq!(tail.reason, expected, "cut {cut}");
            }
        }
    }

    #[test]
    fn every_corrupted_byte_is_detected() {
        let (log, commands, boundaries) = sample();
        for at in 0..log.len() {
            let mut bad = log.clone();
            bad[at] ^= 0x20;
            let (seen, report) = replay_all(&bad);
            let tail = report.torn_tail.expect("corruption must be reported");
            if at < HEADER.len() {
                assert!(seen.is_empty());
                assert_eq!(tail.offset, 0);
            } else {
                // Everything before the damaged record is still applied.
                let record = boundaries.iter().rposition(|&b| b <= at).unwrap();
                assert_eq!(seen, commands[..record], "flip at {at}");
                assert_eq!(tail.offset, boundaries[record]);
            }
        }
    }

    #[test]
    fn header_problems() {
        let reason = |bytes: &[u8]| replay_all(bytes).1.torn_tail.unwrap().reason;
        assert_eq!(reason(b"*2\r\n$3\r\nSET"), TailReason::BadMagic);
        let mut future = HEADER.to_vec();
        future[8] = 2;
        assert_eq!(reason(&future), TailReason::UnsupportedVersion(2));
        assert_eq!(reason(&HEADER[..5]), TailReason::TruncatedHeader);
    }

    #[test]
    fn valid_checksum_over_garbage_is_malformed() {
        let mut log = HEADER.to_vec();
        let payload = b"not resp";
        log.extend((payload.len() as u32).to_le_bytes());
        log.extend(crc32c(payload).to_le_bytes());
        log.extend(payload);
        let report = replay_all(&log).1;
        assert_eq!(
            report.torn_tail,
            Some(TailError {
                offset: HEADER.len(),
                reason: TailReason::MalformedPayload
            })
        );
    }
}
