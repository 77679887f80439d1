//! Frames, regions and fault resolution.

use crate::{check, Outcome};
use alloc::vec::Vec;
use libos::mm::{self, Access, FaultError, Region, FRAME_SIZE};

pub fn frame_allocator() -> Outcome {
    let before = mm::stats().free_frames;
    let image = mm::layout::image().image;
    let mut frames = Vec::new();
    for _ in 0..256 {
        frames.push(mm::alloc_frame().map_err(|e| alloc::format!("{e}"))?);
    }
    check!(mm::stats().free_frames == before - 256, "free count did not drop by 256");
    for &f in &frames {
        check!(f % FRAME_SIZE == 0, "frame {f:#x} is not page-aligned");
        check!(f != 0 && !image.contains(&f), "frame {f:#x} overlaps the image or page 0");
        check!(mm::translate(f) == Some(f), "frame {f:#x} is not identity-mapped");
    }
    let mut sorted = frames.clone();
    sorted.sort();
    sorted.dedup();
    check!(sorted.len() == frames.len(), "a frame was handed out twice");
    frames.into_iter().for_each(mm::free_frame);
    check!(mm::stats().free_frames == before, "frames were not all returned");
    Ok(())
}

pub fn contiguous_frames() -> Outcome {
    let before = mm::stats().free_frames;
    let run = mm::alloc_contiguous(512, 2 << 20).map_err(|e| alloc::format!("{e}"))?;
    check!(run % (2 << 20) == 0, "run at {run:#x} is not 2 MiB aligned");
    check!(mm::stats().free_frames == before - 512, "free count did not drop by 512");
    mm::free_contiguous(run, 512);
    check!(mm::stats().free_frames == before, "run was not returned");
    Ok(())
}

pub fn resolve_directly() -> Outcome {
    let region = Region::demand_zero(64 * 1024).map_err(|e| alloc::format!("{e}"))?;
    let addr = region.start() + 3 * FRAME_SIZE + 17;
    check!(!region.is_resident(3 * FRAME_SIZE), "page resident before any fault");
    let first = mm::resolve(addr, Access::Write);
    check!(first == Ok(mm::Resolution::MappedZeroed), "first resolve gave {first:?}");
    let second = mm::resolve(addr, Access::Read);
    check!(second == Ok(mm::Resolution::AlreadyMapped), "second resolve gave {second:?}");
    check!(region.resident_pages() == 1, "{} pages resident", region.resident_pages());
    let exec = mm::resolve(addr, Access::Execute);
    check!(exec == Err(FaultError::PermissionDenied(Access::Execute)), "execute gave {exec:?}");
    let outside = mm::resolve(region.start() + region.len() + 1, Access::Read);
    check!(outside == Err(FaultError::NoRegion), "address past the region gave {outside:?}");
    check!(region.as_slice()[3 * FRAME_SIZE + 17] == 0, "demand page is not zeroed");
    Ok(())
}

pub fn sparse_demand_region() -> Outcome {
    const LEN: usize = 8 << 30;
    const STRIDE: usize = 64 << 20;
    let before = mm::stats();
    let mut region = Region::demand_zero(LEN).map_err(|e| alloc::format!("{e}"))?;
    check!(region.resident_pages() == 0, "fresh region has resident pages");
    let bytes = region.as_mut_slice();
    for (i, offset) in (0..LEN).step_by(STRIDE).enumerate() {
        bytes[offset + 5] = i as u8 + 1;
    }
    let touched = LEN / STRIDE;
    check!(region.resident_pages() == touched, "{} resident, {touched} touched", region.resident_pages());
    let after = mm::stats();
    let used = before.free_frames - after.free_frames;
    // One frame per touched page plus at most two page-table pages per touch.
    check!(used >= touched && used <= 3 * touched, "{used} frames for {touched} pages");
    check!(after.demand_faults - before.demand_faults == touched as u64, "fault count is off");
    for (i, offset) in (0..LEN).step_by(STRIDE).enumerate() {
        check!(region.as_slice()[offset + 5] == i as u8 + 1, "data lost at {offset:#x}");
    }
    drop(region);
    let freed = mm::stats().free_frames;
    check!(before.free_frames - freed <= 16, "dropping the region leaked {} frames", before.free_frames - freed);
    Ok(())
}

pub fn discard_and_refault() -> Outcome {
    let mut region = Region::eager(16 * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    check!(region.resident_pages() == 16, "eager region is not fully mapped");
    region.as_mut_slice().fill(0xab);
    let freed = region.discard(4 * FRAME_SIZE..8 * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    check!(freed == 4, "discarded {freed} pages, expected 4");
    check!(region.resident_pages() == 12, "{} resident after discard", region.resident_pages());
    let bytes = region.as_slice();
    check!(bytes[4 * FRAME_SIZE..8 * FRAME_SIZE].iter().all(|&b| b == 0), "discarded pages kept data");
    check!(bytes[..4 * FRAME_SIZE].iter().all(|&b| b == 0xab), "kept pages lost data");
    check!(region.discard(0..17 * FRAME_SIZE) == Err(mm::MmError::OutOfRange), "range check missing");
    Ok(())
}

pub fn out_of_frames() -> Outcome {
    let before = mm::stats();
    let too_big = (before.total_frames + 1024) * FRAME_SIZE;
    match Region::eager(too_big) {
        Err(mm::MmError::OutOfFrames) => {}
        Err(e) => return Err(alloc::format!("expected out of frames, got {e}")),
        Ok(_) => return Err("more memory than RAM was mapped".into()),
    }
    let after = mm::stats().free_frames;
    check!(before.free_frames - after <= 16, "the failed request leaked {} frames", before.free_frames - after);
    Ok(())
}
