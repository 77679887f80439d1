// Faultline entry points. The boot core enters at `_start` (x0 = DTB address
// or 0); other cores enter at `_secondary_start` through PSCI CPU_ON with
// x0 = their core index. Both end in `kernel_entry(dtb, core, entry_el)` at EL1, MMU on
// with the boot identity map, FP/SIMD on, running on the core's thread stack
// (SP_EL0) with the exception stack in SP_EL1.

.section .text.boot, "ax"
.global _start
_start:
    mov     x19, x0
    mov     x20, #0
    b       .Lcommon

.global _secondary_start
_secondary_start:
    mov     x19, #0
    mov     x20, x0

.Lcommon:
    msr     daifset, #0xf
    mrs     x1, CurrentEL
    ubfx    x21, x1, #2, #2
    cmp     x21, #2
    b.ne    .Lat_el1

    // Entered at EL2 (as firmware hands over on real boards): run at EL1.
    mov     x1, #(1 << 31)              // HCR_EL2.RW: EL1 is AArch64, nothing trapped
    msr     hcr_el2, x1
    mov     x1, #3                      // CNTHCTL_EL2: EL1 may use the physical counter and timer
    msr     cnthctl_el2, x1
    msr     cntvoff_el2, xzr
    mov     x1, #0x33ff                 // CPTR_EL2: RES1 bits only, FP/SIMD not trapped
    msr     cptr_el2, x1
    msr     hstr_el2, xzr
    msr     vttbr_el2, xzr
    ldr     x1, ={sctlr_reset}
    msr     sctlr_el1, x1
    mov     x1, #0x3c5                  // SPSR_EL2: EL1h with D, A, I, F masked
    msr     spsr_el2, x1
    adr     x1, .Lat_el1
    msr     elr_el2, x1
    eret

.Lat_el1:
    mov     x1, #(3 << 20)              // CPACR_EL1.FPEN: FP/SIMD usable at EL1
    msr     cpacr_el1, x1

    // MMU on with the boot identity map (1 GiB blocks, ASID 0, non-global).
    ldr     x1, ={mair}
    msr     mair_el1, x1
    ldr     x1, ={tcr}
    msr     tcr_el1, x1
    adrp    x1, {boot_map}
    msr     ttbr0_el1, x1
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    mrs     x1, sctlr_el1
    ldr     x2, ={sctlr_clear}
    bic     x1, x1, x2
    ldr     x2, ={sctlr_set}
    orr     x1, x1, x2
    msr     sctlr_el1, x1
    isb
    ic      iallu
    dsb     nsh
    isb

    // This core's stacks: [guard][thread stack][guard][exception stack].
    adrp    x1, __stacks_start
    add     x1, x1, :lo12:__stacks_start
    ldr     x2, ={core_stacks_size}
    madd    x1, x20, x2, x1
    ldr     x2, ={thread_stack_top}
    add     x3, x1, x2
    ldr     x2, ={exception_stack_top}
    add     x4, x1, x2
    msr     spsel, #1
    mov     sp, x4
    msr     spsel, #0
    mov     sp, x3
    msr     tpidr_el1, x20

    adrp    x1, exception_vectors
    add     x1, x1, :lo12:exception_vectors
    msr     vbar_el1, x1
    isb

    cbnz    x20, .Lenter_rust
    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
.Lzero_bss:
    cmp     x1, x2
    b.hs    .Lenter_rust
    stp     xzr, xzr, [x1], #16
    b       .Lzero_bss

.Lenter_rust:
    mov     x0, x19
    mov     x1, x20
    mov     x2, x21
    mov     x29, xzr
    mov     x30, xzr
    bl      {kernel_entry}
.Lhang:
    wfe
    b       .Lhang
