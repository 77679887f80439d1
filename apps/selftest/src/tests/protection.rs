//! W^X, guard pages and fault decoding, checked with probes (accesses whose
//! fault is returned instead of crashing the kernel).

use crate::{check, Outcome};
use alloc::boxed::Box;
use alloc::string::ToString;
use libos::arch::esr::{AbortKind, Esr};
use libos::arch::probe;
use libos::mm::{layout, Region};

fn expect_permission_fault(what: &str, r: Result<(), Esr>) -> Outcome {
    match r {
        Err(esr) if matches!(esr.abort_kind(), Some(AbortKind::Permission(_))) => Ok(()),
        Err(esr) => Err(alloc::format!("{what}: unexpected fault {esr}")),
        Ok(()) => Err(alloc::format!("{what}: access succeeded")),
    }
}

pub fn text_and_rodata_read_only() -> Outcome {
    let image = layout::image();
    for (what, addr) in [
        ("text", image.text.start + 64),
        ("rodata", image.rodata.start),
    ] {
        // SAFETY: reading kernel text/rodata has no side effects.
        let byte = unsafe { probe::read_u8(addr) }
            .map_err(|e| alloc::format!("{what} unreadable: {e}"))?;
        // SAFETY: writes back the byte just read, so even a (wrongly)
        // writable mapping is left unchanged; nothing writes there concurrently.
        expect_permission_fault(what, unsafe { probe::write_u8(addr, byte) })?;
    }
    Ok(())
}

pub fn no_execute() -> Outcome {
    let mut on_stack = [0u8; 4];
    expect_permission_fault("stack", probe::exec_ret_in(&mut on_stack))?;
    let mut on_heap = Box::new([0u8; 4]);
    expect_permission_fault("heap", probe::exec_ret_in(&mut on_heap))?;
    static mut IN_DATA: [u8; 4] = [0; 4];
    // SAFETY: the only reference to this static is taken here, on one core.
    let in_data = unsafe { &mut *core::ptr::addr_of_mut!(IN_DATA) };
    expect_permission_fault("data", probe::exec_ret_in(in_data))?;
    let mut region = Region::demand_zero(4096).map_err(|e| e.to_string())?;
    let page: &mut [u8; 4] = (&mut region.as_mut_slice()[..4]).try_into().unwrap();
    expect_permission_fault("demand region", probe::exec_ret_in(page))?;
    Ok(())
}

fn expect_translation_fault(what: &str, addr: usize) -> Outcome {
    // SAFETY: `addr` is unmapped normal-memory address space; a successful
    // read has no side effects either.
    match unsafe { probe::read_u8(addr) } {
        Err(esr) if matches!(esr.abort_kind(), Some(AbortKind::Translation(_))) => Ok(()),
        Err(esr) => Err(alloc::format!("{what}: unexpected fault {esr}")),
        Ok(_) => Err(alloc::format!("{what} at {addr:#x} is readable")),
    }
}

pub fn guards_and_null() -> Outcome {
    let stacks = layout::core_stacks(layout::image().stacks.start, 0);
    expect_translation_fault("thread stack guard", stacks.thread_guard.start + 8)?;
    expect_translation_fault("exception stack guard", stacks.exception_guard.start)?;
    expect_translation_fault("null page", 0)?;
    expect_translation_fault("unreserved region space", layout::REGION_WINDOW.end - 4096)?;
    Ok(())
}

pub fn fault_decoding() -> Outcome {
    // SAFETY: page 0 is never mapped.
    let esr = unsafe { probe::write_u8(8, 1) }
        .err()
        .ok_or("write to page 0 succeeded")?;
    let text = esr.to_string();
    check!(text.contains("data abort"), "{text}");
    check!(text.contains("translation fault at level"), "{text}");
    check!(text.contains("on write"), "{text}");
    Ok(())
}
