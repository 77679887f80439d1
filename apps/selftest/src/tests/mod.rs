//! The in-guest tests, grouped by subsystem.

pub mod die;
mod dma;
mod event_records;
mod isolation;
mod memory;
mod protection;
mod smp;
mod zdma;

/// A test: its name and the function that runs it.
pub type Test = (&'static str, fn() -> crate::Outcome);

/// Every test, in the order they run.
pub const ALL: &[Test] = &[
    (
        "frame_allocator_hands_out_distinct_ram_frames",
        memory::frame_allocator,
    ),
    ("contiguous_frames_are_aligned", memory::contiguous_frames),
    ("resolve_maps_demand_pages_once", memory::resolve_directly),
    (
        "demand_region_touched_sparsely",
        memory::sparse_demand_region,
    ),
    (
        "discarded_pages_fault_back_as_zeros",
        memory::discard_and_refault,
    ),
    ("out_of_frames_is_an_error", memory::out_of_frames),
    (
        "evicted_pages_come_back_with_their_data",
        memory::evicted_pages_come_back,
    ),
    (
        "pinned_pages_stay_resident",
        memory::pinned_pages_stay_resident,
    ),
    (
        "dropping_pinned_pages_never_frees_their_frames",
        memory::dropping_pinned_pages_never_frees_their_frames,
    ),
    (
        "huge_pages_map_blocks_and_split_on_evict",
        memory::huge_pages_map_blocks_and_split,
    ),
    (
        "huge_pages_pin_whole_blocks_and_discard_splits",
        memory::huge_pages_pin_whole_blocks_and_discard_splits,
    ),
    (
        "huge_pages_return_where_a_block_was_discarded_page_by_page",
        memory::huge_pages_return_where_a_block_was_discarded_page_by_page,
    ),
    (
        "huge_pages_read_the_shared_zero_block",
        memory::huge_pages_read_the_shared_zero_block,
    ),
    (
        "text_and_rodata_are_not_writable",
        protection::text_and_rodata_read_only,
    ),
    (
        "data_stack_heap_and_regions_are_not_executable",
        protection::no_execute,
    ),
    ("guard_pages_and_null_fault", protection::guards_and_null),
    (
        "fault_reports_decode_the_syndrome",
        protection::fault_decoding,
    ),
    ("run_on_every_core_and_join", smp::run_on_every_core),
    (
        "demand_zero_faults_on_all_cores_at_once",
        smp::demand_faults_on_all_cores,
    ),
    ("heap_stress_on_all_cores", smp::heap_stress),
    (
        "evicted_pages_fault_in_on_all_cores_once",
        memory::evicted_pages_fault_in_on_all_cores_once,
    ),
    ("timer_interrupts_on_all_cores", smp::timer_interrupts),
    (
        "event_storms_are_counted_alike_by_vector_and_plain_loops",
        event_records::vector_count_agrees_with_plain,
    ),
];

/// Tests of DMA through the SMMU, on boards that have one with devices.
pub const DMA: &[Test] = &[
    // First: it checks that devices opened at once are opened once.
    (
        "devices_opened_on_every_core_at_once_are_opened_once",
        dma::devices_opened_on_every_core_at_once_are_opened_once,
    ),
    (
        "dma_into_untouched_buffer_lands_and_counts_faults",
        dma::dma_into_untouched_buffer,
    ),
    (
        "dma_from_evicted_buffer_reads_back_correct_data",
        dma::dma_from_evicted_buffer,
    ),
    (
        "device_write_to_read_only_page_is_reported_not_retried",
        dma::device_write_to_read_only_page,
    ),
    (
        "dma_outside_every_region_fails_and_corrupts_nothing",
        dma::dma_outside_every_region,
    ),
    (
        "event_queue_overflow_is_recovered_with_correct_data",
        dma::event_queue_overflow_is_recovered,
    ),
    (
        "nvme_round_trips_under_every_policy",
        dma::nvme_round_trips_under_every_policy,
    ),
    (
        "nvme_gathers_odd_pieces_through_a_fault",
        dma::nvme_gathers_odd_pieces_through_a_fault,
    ),
    (
        "nvme_round_trips_on_every_core_at_once",
        dma::nvme_round_trips_on_every_core_at_once,
    ),
    (
        "device_write_after_read_of_the_zero_block_gets_its_own",
        dma::device_write_after_read_of_the_zero_block,
    ),
    (
        "dma_into_kernel_text_is_isolated",
        isolation::dma_into_kernel_text,
    ),
    (
        "dma_into_a_page_table_is_isolated",
        isolation::dma_into_a_page_table,
    ),
    (
        "dma_into_the_heap_is_isolated",
        isolation::dma_into_the_heap,
    ),
    (
        "dma_into_an_ungranted_region_is_isolated",
        isolation::dma_into_an_ungranted_region,
    ),
    (
        "a_dropped_grant_is_revoked",
        isolation::a_dropped_grant_is_revoked,
    ),
];

/// The stalled-NVMe test, run alone (`selftest nvme-stall`): it leaves the
/// controller disabled.
pub use dma::a_stalled_nvme_command_times_out as dma_stall;

/// Tests of the ZynqMP's ZDMA, on boards that have one (zcu102).
pub const ZDMA: &[Test] = &[
    (
        "zdma_copies_to_a_pinned_region",
        zdma::copies_to_a_pinned_region,
    ),
    (
        "zdma_copies_from_a_pinned_region",
        zdma::copies_from_a_pinned_region,
    ),
    (
        "zdma_refuses_memory_that_is_not_pinned",
        zdma::refuses_memory_that_is_not_pinned,
    ),
    (
        "zdma_policies_other_than_pin_need_an_smmu",
        zdma::policies_other_than_pin_need_an_smmu,
    ),
];
