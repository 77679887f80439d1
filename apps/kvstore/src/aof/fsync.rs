//! The `appendfsync` setting: how often the log reaches stable storage.

/// When the server syncs the log, trading durability for throughput exactly
/// as Redis's `appendfsync` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AppendFsync {
    /// After every write: lose nothing, slowest.
    Always,
    /// Once a second: lose at most about a second of writes.
    #[default]
    EverySec,
    /// Never explicitly; leave it to the storage layer.
    No,
}

impl AppendFsync {
    /// Parses the config text (`always`, `everysec`, `no`, any case).
    pub fn parse(text: &[u8]) -> Option<Self> {
        match text.to_ascii_lowercase().as_slice() {
            b"always" => Some(AppendFsync::Always),
            b"everysec" => Some(AppendFsync::EverySec),
            b"no" => Some(AppendFsync::No),
            _ => None,
        }
    }

    /// The config text, for `CONFIG GET appendfsync`.
    pub fn as_str(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::EverySec => "everysec",
            AppendFsync::No => "no",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_config_text_roundtrip() {
        for mode in [AppendFsync::Always, AppendFsync::EverySec, AppendFsync::No] {
            assert_eq!(AppendFsync::parse(mode.as_str().as_bytes()), Some(mode));
        }
        assert_eq!(AppendFsync::parse(b"EverySec"), Some(AppendFsync::EverySec));
        assert_eq!(AppendFsync::parse(b"sometimes"), None);
    }
}
