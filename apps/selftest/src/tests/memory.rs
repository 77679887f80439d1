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
    check!(
        mm::stats().free_frames == before - 256,
        "free count did not drop by 256"
    );
    for &f in &frames {
        check!(f % FRAME_SIZE == 0, "frame {f:#x} is not page-aligned");
        check!(
            f != 0 && !image.contains(&f),
            "frame {f:#x} overlaps the image or page 0"
        );
        check!(
            mm::translate(f) == Some(f),
            "frame {f:#x} is not identity-mapped"
        );
    }
    let mut sorted = frames.clone();
    sorted.sort();
    sorted.dedup();
    check!(sorted.len() == frames.len(), "a frame was handed out twice");
    frames.into_iter().for_each(mm::free_frame);
    check!(
        mm::stats().free_frames == before,
        "frames were not all returned"
    );
    Ok(())
}

pub fn contiguous_frames() -> Outcome {
    let before = mm::stats().free_frames;
    let run = mm::alloc_contiguous(512, 2 << 20).map_err(|e| alloc::format!("{e}"))?;
    check!(run % (2 << 20) == 0, "run at {run:#x} is not 2 MiB aligned");
    check!(
        mm::stats().free_frames == before - 512,
        "free count did not drop by 512"
    );
    mm::free_contiguous(run, 512);
    check!(mm::stats().free_frames == before, "run was not returned");
    Ok(())
}

pub fn resolve_directly() -> Outcome {
    let region = Region::demand_zero(64 * 1024).map_err(|e| alloc::format!("{e}"))?;
    let addr = region.start() + 3 * FRAME_SIZE + 17;
    check!(
        !region.is_resident(3 * FRAME_SIZE),
        "page resident before any fault"
    );
    let first = mm::resolve(addr, Access::Write);
    check!(
        first == Ok(mm::Resolution::MappedZeroed),
        "first resolve gave {first:?}"
    );
    let second = mm::resolve(addr, Access::Read);
    check!(
        second == Ok(mm::Resolution::AlreadyMapped),
        "second resolve gave {second:?}"
    );
    check!(
        region.resident_pages() == 1,
        "{} pages resident",
        region.resident_pages()
    );
    let exec = mm::resolve(addr, Access::Execute);
    check!(
        exec == Err(FaultError::PermissionDenied(Access::Execute)),
        "execute gave {exec:?}"
    );
    let outside = mm::resolve(region.start() + region.len() + 1, Access::Read);
    check!(
        outside == Err(FaultError::NoRegion),
        "address past the region gave {outside:?}"
    );
    check!(
        region.as_slice()[3 * FRAME_SIZE + 17] == 0,
        "demand page is not zeroed"
    );
    Ok(())
}

pub fn sparse_demand_region() -> Outcome {
    const LEN: usize = 8 << 30;
    const STRIDE: usize = 64 << 20;
    let before = mm::stats();
    let mut region = Region::demand_zero(LEN).map_err(|e| alloc::format!("{e}"))?;
    check!(
        region.resident_pages() == 0,
        "fresh region has resident pages"
    );
    let bytes = region.as_mut_slice();
    for (i, offset) in (0..LEN).step_by(STRIDE).enumerate() {
        bytes[offset + 5] = i as u8 + 1;
    }
    let touched = LEN / STRIDE;
    check!(
        region.resident_pages() == touched,
        "{} resident, {touched} touched",
        region.resident_pages()
    );
    let after = mm::stats();
    let used = before.free_frames - after.free_frames;
    // One frame per touched page plus at most two page-table pages per touch.
    check!(
        used >= touched && used <= 3 * touched,
        "{used} frames for {touched} pages"
    );
    check!(
        after.demand_faults - before.demand_faults == touched as u64,
        "fault count is off"
    );
    for (i, offset) in (0..LEN).step_by(STRIDE).enumerate() {
        check!(
            region.as_slice()[offset + 5] == i as u8 + 1,
            "data lost at {offset:#x}"
        );
    }
    drop(region);
    let freed = mm::stats().free_frames;
    check!(
        before.free_frames - freed <= 16,
        "dropping the region leaked {} frames",
        before.free_frames - freed
    );
    Ok(())
}

pub fn discard_and_refault() -> Outcome {
    let mut region = Region::eager(16 * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    check!(
        region.resident_pages() == 16,
        "eager region is not fully mapped"
    );
    region.as_mut_slice().fill(0xab);
    let freed = region
        .discard(4 * FRAME_SIZE..8 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(freed == 4, "discarded {freed} pages, expected 4");
    check!(
        region.resident_pages() == 12,
        "{} resident after discard",
        region.resident_pages()
    );
    let bytes = region.as_slice();
    check!(
        bytes[4 * FRAME_SIZE..8 * FRAME_SIZE]
            .iter()
            .all(|&b| b == 0),
        "discarded pages kept data"
    );
    check!(
        bytes[..4 * FRAME_SIZE].iter().all(|&b| b == 0xab),
        "kept pages lost data"
    );
    check!(
        region.discard(0..17 * FRAME_SIZE) == Err(mm::MmError::OutOfRange),
        "range check missing"
    );
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
    check!(
        before.free_frames - after <= 16,
        "the failed request leaked {} frames",
        before.free_frames - after
    );
    Ok(())
}

pub fn evicted_pages_come_back() -> Outcome {
    const PAGES: usize = 64;
    let mut region = Region::demand_zero(PAGES * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    for (i, byte) in region.as_mut_slice().iter_mut().enumerate() {
        *byte = (i / FRAME_SIZE) as u8 ^ (i as u8);
    }
    // One page stays all zeros: it must come back as zeros with no storage.
    region.as_mut_slice()[7 * FRAME_SIZE..8 * FRAME_SIZE].fill(0);
    let before = mm::stats();
    let evicted = region
        .evict(0..PAGES * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(evicted == PAGES, "evicted {evicted} of {PAGES}");
    check!(
        region.resident_pages() == 0,
        "{} pages still resident",
        region.resident_pages()
    );
    check!(
        mm::stats().free_frames == before.free_frames + 1,
        "a zero page took backing storage"
    );
    for (i, &byte) in region.as_slice().iter().enumerate() {
        let want = if i / FRAME_SIZE == 7 {
            0
        } else {
            (i / FRAME_SIZE) as u8 ^ (i as u8)
        };
        check!(byte == want, "byte {i} came back as {byte}, not {want}");
    }
    let after = mm::stats();
    check!(
        after.swap_ins - before.swap_ins == PAGES as u64,
        "{} swap-ins",
        after.swap_ins - before.swap_ins
    );
    Ok(())
}

pub fn pinned_pages_stay_resident() -> Outcome {
    let mut region = Region::demand_zero(32 * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    region
        .pin(0..8 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        region.resident_pages() == 8,
        "pinning did not fault the pages in"
    );
    region
        .pin(0..FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    region.as_mut_slice()[..32 * FRAME_SIZE].fill(1);
    region
        .evict(0..32 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        region.resident_pages() == 8,
        "{} resident: pinned pages were evicted",
        region.resident_pages()
    );
    region
        .unpin(0..8 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    region
        .evict(0..32 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        region.resident_pages() == 1,
        "the doubly pinned page must stay, {} resident",
        region.resident_pages()
    );
    region
        .unpin(0..FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    region
        .evict(0..32 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        region.resident_pages() == 0,
        "unpinned pages were not evicted"
    );
    check!(
        region.as_slice().iter().all(|&b| b == 1),
        "data lost across pin/evict"
    );
    Ok(())
}

/// A region dropped (or discarded) while pages of it are pinned, as a DMA
/// under `Policy::Pin` pins them, keeps those frames out of the allocator:
/// a device may still write them, so they must never reach a new owner.
pub fn dropping_pinned_pages_never_frees_their_frames() -> Outcome {
    let kept_before = libos::mm::stats().kept_pinned_frames;
    let mut region = Region::demand_zero(16 * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    region.as_mut_slice().fill(3);
    region
        .pin(0..4 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    let free_before = libos::mm::stats().free_frames;
    let freed = region
        .discard(2 * FRAME_SIZE..6 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        freed == 2,
        "discard freed {freed} frames, only the 2 unpinned may go"
    );
    drop(region);
    let free_after = libos::mm::stats().free_frames;
    // 16 frames, 4 pinned: 12 come back (2 by the discard, 10 by the drop);
    // more would mean pinned frames were freed (fewer: the heap grew).
    let back = free_after as i64 - free_before as i64;
    check!(
        back <= 12,
        "{back} frames came back, at most 12 expected (the 4 pinned stay out)"
    );
    let kept = libos::mm::stats().kept_pinned_frames - kept_before;
    check!(kept == 4, "{kept} pinned frames reported kept, 4 expected");
    Ok(())
}

pub fn huge_pages_map_blocks_and_split() -> Outcome {
    let block = mm::BLOCK_SIZE;
    let mut region = Region::demand_zero_huge(4 * block).map_err(|e| alloc::format!("{e}"))?;
    region.as_mut_slice()[block + 5] = 9;
    check!(
        region.resident_pages() == 512,
        "{} resident after one touch",
        region.resident_pages()
    );
    for (i, b) in region.as_mut_slice()[block..2 * block]
        .iter_mut()
        .enumerate()
    {
        *b = (i % 251) as u8;
    }
    let evicted = region
        .evict(block + 3 * FRAME_SIZE..block + 4 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        evicted == 1 && region.resident_pages() == 511,
        "split + evict left {} resident",
        region.resident_pages()
    );
    check!(
        region.as_slice()[block..2 * block]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i % 251) as u8),
        "data changed across the split"
    );
    check!(
        region.resident_pages() == 512,
        "the evicted page did not come back"
    );
    drop(region);
    Ok(())
}

pub fn huge_pages_pin_whole_blocks_and_discard_splits() -> Outcome {
    let block = mm::BLOCK_SIZE;
    let mut region = Region::demand_zero_huge(2 * block).map_err(|e| alloc::format!("{e}"))?;
    for (i, b) in region.as_mut_slice().iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    // Pinning one page of a block pins the block: it stays one mapping (one
    // SMMU translation), and none of its pages can be evicted.
    region
        .pin(FRAME_SIZE..2 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    let evicted = region
        .evict(7 * FRAME_SIZE..8 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(evicted == 0, "{evicted} pages of a pinned block evicted");
    region
        .unpin(FRAME_SIZE..2 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    let evicted = region
        .evict(7 * FRAME_SIZE..8 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(evicted == 1, "{evicted} pages evicted once unpinned");
    // Discarding one page of the other block splits it and keeps the rest.
    let freed = region
        .discard(block + 3 * FRAME_SIZE..block + 4 * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    check!(
        freed == 1 && region.resident_pages() == 2 * 512 - 2,
        "discard freed {freed}, {} resident",
        region.resident_pages()
    );
    let intact = region.as_slice().iter().enumerate().all(|(i, &b)| {
        let discarded = (block + 3 * FRAME_SIZE..block + 4 * FRAME_SIZE).contains(&i);
        b == if discarded { 0 } else { (i % 253) as u8 }
    });
    check!(intact, "data changed around the discarded page");
    Ok(())
}

pub fn huge_pages_return_where_a_block_was_discarded_page_by_page() -> Outcome {
    let block = mm::BLOCK_SIZE;
    let mut region = Region::demand_zero_huge(block).map_err(|e| alloc::format!("{e}"))?;
    region.as_mut_slice()[0] = 1;
    // Page by page, the block is split into a page table that ends up empty.
    for page in (0..block).step_by(FRAME_SIZE) {
        region
            .discard(page..page + FRAME_SIZE)
            .map_err(|e| alloc::format!("{e}"))?;
    }
    check!(
        region.resident_pages() == 0,
        "pages left after discarding all"
    );
    region.as_mut_slice()[block - 1] = 2;
    check!(
        region.resident_pages() == 512 && region.as_slice()[0] == 0,
        "{} pages after the next touch: the empty table kept the block out",
        region.resident_pages()
    );
    Ok(())
}

pub fn huge_pages_read_the_shared_zero_block() -> Outcome {
    let block = mm::BLOCK_SIZE;
    let err = |e: mm::MmError| alloc::format!("{e}");
    // Reading a block never written maps the shared zero block: no frame
    // of its own, no zeroing (the first such read anywhere takes the zero
    // block itself from the allocator, so count after one).
    let mut a = Region::demand_zero_huge(2 * block).map_err(err)?;
    check!(a.as_slice()[5] == 0, "a fresh page does not read as zero");
    let free = mm::stats().free_frames;
    check!(
        a.as_slice()[block + 9] == 0 && a.is_resident(block + 9),
        "a read of a second block did not map it"
    );
    // (At most one frame may go to a page table.)
    check!(
        a.resident_pages() == 0 && free - mm::stats().free_frames <= 1,
        "reads took {} frames, {} resident",
        free - mm::stats().free_frames,
        a.resident_pages()
    );
    // The first write gets a zeroed block of its own; the other block
    // still reads zeros.
    a.as_mut_slice()[block + 9] = 7;
    check!(
        a.resident_pages() == 512 && a.as_slice()[block + 8] == 0 && a.as_slice()[block + 9] == 7,
        "copy-on-write of a zero block went wrong ({} resident)",
        a.resident_pages()
    );
    check!(
        a.as_slice()[9] == 0,
        "a write showed through the zero block"
    );
    // Write protection comes and goes without making the zero block writable.
    a.set_writable(false);
    a.set_writable(true);
    a.as_mut_slice()[3] = 1;
    let b = Region::demand_zero_huge(block).map_err(err)?;
    check!(
        b.as_slice().iter().all(|&x| x == 0),
        "the shared zero block was written"
    );
    // Pinning wants a frame of its own; evicting and discarding a zero
    // mapping unmaps it and frees nothing.
    let mut c = Region::demand_zero_huge(3 * block).map_err(err)?;
    for at in [0, block, 2 * block] {
        core::hint::black_box(c.as_slice()[at]);
    }
    check!(c.resident_pages() == 0, "reads of c took frames");
    c.pin(0..FRAME_SIZE).map_err(err)?;
    check!(c.resident_pages() == 512, "pin kept the zero block");
    c.unpin(0..FRAME_SIZE).map_err(err)?;
    c.evict(block + FRAME_SIZE..block + 2 * FRAME_SIZE)
        .map_err(err)?;
    let freed = c.discard(2 * block..3 * block).map_err(err)?;
    check!(
        freed == 0 && !c.is_resident(2 * block),
        "discarding a zero mapping freed {freed} frames or left it mapped"
    );
    check!(
        c.as_slice()[block..3 * block].iter().all(|&x| x == 0),
        "evicted or discarded zero pages read back wrong"
    );
    let before_drop = mm::stats().free_frames;
    let own = a.resident_pages() + c.resident_pages();
    drop((a, b, c));
    // Their own frames come back, and a few page tables; the zero block not.
    let back = mm::stats().free_frames - before_drop;
    check!(
        (own..own + 16).contains(&back),
        "dropping freed {back} frames for {own} of their own (the zero block too?)"
    );
    let d = Region::demand_zero_huge(block).map_err(err)?;
    check!(
        d.as_slice().iter().all(|&x| x == 0),
        "the zero block changed after its users were dropped"
    );
    Ok(())
}

pub fn evicted_pages_fault_in_on_all_cores_once() -> Outcome {
    const PAGES: usize = 256;
    let mut region = Region::demand_zero(PAGES * FRAME_SIZE).map_err(|e| alloc::format!("{e}"))?;
    for (i, word) in region.as_atomic_u64s().iter().enumerate() {
        word.store(i as u64 + 1, core::sync::atomic::Ordering::Relaxed);
    }
    region
        .evict(0..PAGES * FRAME_SIZE)
        .map_err(|e| alloc::format!("{e}"))?;
    let before = mm::stats().swap_ins;
    let bad = core::sync::atomic::AtomicUsize::new(0);
    let words = region.as_atomic_u64s();
    libos::smp::on_each_core(|core| {
        for i in 0..PAGES {
            let page = (i + core * 17) % PAGES;
            let w = page * FRAME_SIZE / 8 + core;
            if words[w].load(core::sync::atomic::Ordering::Relaxed) != w as u64 + 1 {
                bad.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    check!(
        bad.load(core::sync::atomic::Ordering::Relaxed) == 0,
        "wrong data after concurrent swap-in"
    );
    let swap_ins = mm::stats().swap_ins - before;
    check!(
        swap_ins == PAGES as u64,
        "{swap_ins} swap-ins for {PAGES} pages (a page brought in twice?)"
    );
    Ok(())
}
