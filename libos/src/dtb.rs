//! What the kernel reads from a flattened device tree: RAM, cores, and the
//! command line. Pure functions over bytes, so they are tested on the host
//! with trees built there.

use core::ops::Range;
use hw::board::PsciConduit;
use hw::layout::MAX_CORES;

/// Facts from a device tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DtbFacts<'a> {
    /// RAM ranges from `/memory` nodes (at most 4).
    pub memory: [Option<Range<usize>>; 4],
    /// MPIDR affinity of each core in `/cpus`, in order (at most MAX_CORES).
    pub cpus: [Option<u64>; MAX_CORES],
    /// Cores the tree lists, including any beyond MAX_CORES.
    pub cpus_listed: usize,
    /// `/chosen/bootargs`, if present.
    pub bootargs: Option<&'a str>,
    /// How to call PSCI (`/psci` `method`): QEMU virt switches from HVC to
    /// SMC when it emulates EL2.
    pub psci: Option<PsciConduit>,
}

/// Why a blob is not a usable device tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtbError {
    /// Wrong magic or a malformed header/structure.
    Invalid,
}

/// The total size a DTB header claims, if `header` starts with the magic.
pub fn total_size(header: &[u8]) -> Option<usize> {
    let magic = u32::from_be_bytes(header.get(0..4)?.try_into().ok()?);
    let size = u32::from_be_bytes(header.get(4..8)?.try_into().ok()?);
    (magic == 0xd00d_feed && size >= 40).then_some(size as usize)
}

/// Reads the facts the kernel needs from `blob`.
pub fn parse(blob: &[u8]) -> Result<DtbFacts<'_>, DtbError> {
    let fdt = fdt::Fdt::new(blob).map_err(|_| DtbError::Invalid)?;
    let mut facts = DtbFacts::default();
    let mut slots = facts.memory.iter_mut();
    for node in fdt.all_nodes().filter(|n| n.name.starts_with("memory")) {
        for reg in node.reg().into_iter().flatten() {
            let (start, Some(size)) = (reg.starting_address as usize, reg.size) else {
                continue;
            };
            if size > 0 {
                if let Some(slot) = slots.next() {
                    *slot = Some(start..start.saturating_add(size));
                }
            }
        }
    }
    // The crate's `cpus()` and `chosen()` panic when a node is missing, so
    // walk the nodes directly: a malformed tree must not stop the boot.
    let cpus = fdt
        .find_node("/cpus")
        .into_iter()
        .flat_map(|n| n.children());
    for cpu in cpus.filter(|c| c.name.split('@').next() == Some("cpu")) {
        if let Some(id) = cpu.property("reg").and_then(|p| p.as_usize()) {
            if facts.cpus_listed < MAX_CORES {
                facts.cpus[facts.cpus_listed] = Some(id as u64);
            }
            facts.cpus_listed += 1;
        }
    }
    facts.bootargs = fdt
        .find_node("/chosen")
        .and_then(|n| n.property("bootargs"))
        .and_then(|p| p.as_str())
        .filter(|s| !s.trim().is_empty());
    facts.psci = match fdt
        .find_node("/psci")
        .and_then(|n| n.property("method"))
        .and_then(|p| p.as_str())
    {
        Some("hvc") => Some(PsciConduit::Hvc),
        Some("smc") => Some(PsciConduit::Smc),
        _ => None,
    };
    Ok(facts)
}

impl DtbFacts<'_> {
    /// The RAM range containing `addr`.
    pub fn ram_containing(&self, addr: usize) -> Option<Range<usize>> {
        self.memory
            .iter()
            .flatten()
            .find(|r| r.contains(&addr))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;
    use vm_fdt::FdtWriter;

    fn tree(cpus: u32, bootargs: Option<&str>) -> Vec<u8> {
        let mut w = FdtWriter::new().unwrap();
        let root = w.begin_node("").unwrap();
        w.property_u32("#address-cells", 2).unwrap();
        w.property_u32("#size-cells", 2).unwrap();
        let chosen = w.begin_node("chosen").unwrap();
        if let Some(args) = bootargs {
            w.property_string("bootargs", args).unwrap();
        }
        w.end_node(chosen).unwrap();
        let mem = w.begin_node("memory@40000000").unwrap();
        w.property_string("device_type", "memory").unwrap();
        w.property_array_u64("reg", &[0x4000_0000, 0x4000_0000])
            .unwrap();
        w.end_node(mem).unwrap();
        let cpus_node = w.begin_node("cpus").unwrap();
        w.property_u32("#address-cells", 1).unwrap();
        w.property_u32("#size-cells", 0).unwrap();
        for i in 0..cpus {
            let cpu = w.begin_node(&std::format!("cpu@{i}")).unwrap();
            w.property_string("device_type", "cpu").unwrap();
            w.property_string("compatible", "arm,cortex-a53").unwrap();
            w.property_u32("reg", i).unwrap();
            w.end_node(cpu).unwrap();
        }
        w.end_node(cpus_node).unwrap();
        let psci = w.begin_node("psci").unwrap();
        w.property_string("method", "smc").unwrap();
        w.end_node(psci).unwrap();
        w.end_node(root).unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn reads_memory_cpus_and_bootargs() {
        let blob = tree(4, Some("4096 4096 100"));
        assert_eq!(total_size(&blob), Some(blob.len()));
        let facts = parse(&blob).unwrap();
        assert_eq!(facts.memory[0], Some(0x4000_0000..0x8000_0000));
        assert_eq!(facts.cpus, [Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(facts.bootargs, Some("4096 4096 100"));
        assert_eq!(facts.psci, Some(PsciConduit::Smc));
        assert_eq!(
            facts.ram_containing(0x4020_0000),
            Some(0x4000_0000..0x8000_0000)
        );
        assert_eq!(facts.ram_containing(0x1000), None);
    }

    #[test]
    fn more_cores_than_supported_are_counted_but_not_kept() {
        let blob = tree(8, None);
        let facts = parse(&blob).unwrap();
        assert_eq!(facts.cpus_listed, 8);
        assert!(facts.cpus.iter().all(Option::is_some));
        assert_eq!(facts.bootargs, None);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(total_size(&[0u8; 64]), None);
        assert_eq!(total_size(&[0xd0, 0x0d]), None);
        assert!(parse(&[0u8; 64]).is_err());
        let mut blob = tree(1, Some("x"));
        blob.truncate(blob.len() / 2);
        assert!(parse(&blob).is_err());
    }
}
