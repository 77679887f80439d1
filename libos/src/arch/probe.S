// Instructions whose faults are expected. When one of the marked
// instructions faults and the memory manager cannot resolve the fault, the
// exception handler resumes at `probe_fixup` with x0 = ESR instead of
// reporting a crash. Each probe returns (x0 = 0 or the ESR, x1 = value).

.section .text.probe, "ax"
.global probe_read_u8
probe_read_u8:
    mov     x1, x0
    mov     x0, #0
.global probe_read_insn
probe_read_insn:
    ldrb    w1, [x1]
.global probe_fixup
probe_fixup:
    ret

.global probe_write_u8
probe_write_u8:
    mov     x2, x0
    mov     x0, #0
.global probe_write_insn
probe_write_insn:
    strb    w1, [x2]
    ret

// Branches to x0; the target must return. A fault on fetching the target
// resumes at `probe_exec_return` with x0 = ESR.
.global probe_exec
probe_exec:
    stp     x29, x30, [sp, #-16]!
    mov     x29, sp
    mov     x2, x0
    mov     x0, #0
    blr     x2
.global probe_exec_return
probe_exec_return:
    ldp     x29, x30, [sp], #16
    ret

// Semihosting call (x0 = operation, x1 = parameter block). Without
// semihosting the HLT is undefined; the handler then returns x0 = -1.
.global semihost_call
semihost_call:
.global semihost_insn
semihost_insn:
    hlt     #0xf000
    ret
