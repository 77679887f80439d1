//! When to compact the log: Redis's `auto-aof-rewrite` rule.

/// Rewrite the log once it has grown by `percentage` percent over its size
/// after the last rewrite (or at start), but never while it is smaller than
/// `min_size`. Redis's defaults: 100 % and 64 MiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RewritePolicy {
    /// Growth over the base size, in percent, that triggers a rewrite;
    /// 0 disables automatic rewrites.
    pub percentage: u64,
    /// Smallest log size worth rewriting, in bytes.
    pub min_size: u64,
}

impl Default for RewritePolicy {
    fn default() -> Self {
        RewritePolicy {
            percentage: 100,
            min_size: 64 * 1024 * 1024,
        }
    }
}

impl RewritePolicy {
    /// Whether a log of `log_bytes` should be rewritten, given that it was
    /// `base_bytes` long right after the last rewrite (or when loaded).
    pub fn should_rewrite(&self, log_bytes: u64, base_bytes: u64) -> bool {
        if self.percentage == 0 || log_bytes < self.min_size {
            return false;
        }
        let base = base_bytes.max(1);
        let growth = u128::from(log_bytes.saturating_sub(base)) * 100 / u128::from(base);
        growth >= u128::from(self.percentage)
    }
}

/// [`RewritePolicy::should_rewrite`] with the default policy: the log is
/// over 64 MiB and at least twice its size after the last rewrite.
pub fn should_rewrite(log_bytes: u64, base_bytes: u64) -> bool {
    RewritePolicy::default().should_rewrite(log_bytes, base_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn default_rule_is_double_and_at_least_64_mib() {
        assert!(!should_rewrite(63 * MIB, 1), "below the minimum");
        assert!(should_rewrite(64 * MIB, 32 * MIB), "exactly doubled");
        assert!(!should_rewrite(64 * MIB - 1, 32 * MIB));
        assert!(!should_rewrite(100 * MIB, 60 * MIB), "grew only 66 %");
        assert!(should_rewrite(120 * MIB, 60 * MIB));
        assert!(should_rewrite(64 * MIB, 0), "no base yet");
    }

    #[test]
    fn configurable() {
        let eager = RewritePolicy {
            percentage: 50,
            min_size: 1000,
        };
        assert!(eager.should_rewrite(1500, 1000));
        assert!(!eager.should_rewrite(1499, 1000));
        let off = RewritePolicy {
            percentage: 0,
            min_size: 0,
        };
        assert!(!off.should_rewrite(u64::MAX, 1));
    }
}
