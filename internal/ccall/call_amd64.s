//go:build !windows

#include "textflag.h"

// callC is called by runtime.cgocall on the system stack with the System V
// convention: DI holds the *Frame. It passes A[0:6] in DI, SI, DX, CX, R8
// and R9 and A[6:12] on the stack, says no vector registers for a variadic
// callee (AL = 0), calls Fn and stores RAX in R.
GLOBL ·callABI0(SB), NOPTR|RODATA, $8
DATA ·callABI0(SB)/8, $callC(SB)

TEXT callC(SB), NOSPLIT|NOFRAME, $0
	PUSHQ BP
	MOVQ  SP, BP
	PUSHQ BX
	PUSHQ R12
	MOVQ  DI, BX
	SUBQ  $48, SP
	ANDQ  $~15, SP
	MOVQ  56(BX), R12
	MOVQ  R12, 0(SP)
	MOVQ  64(BX), R12
	MOVQ  R12, 8(SP)
	MOVQ  72(BX), R12
	MOVQ  R12, 16(SP)
	MOVQ  80(BX), R12
	MOVQ  R12, 24(SP)
	MOVQ  88(BX), R12
	MOVQ  R12, 32(SP)
	MOVQ  96(BX), R12
	MOVQ  R12, 40(SP)
	MOVQ  8(BX), DI
	MOVQ  16(BX), SI
	MOVQ  24(BX), DX
	MOVQ  32(BX), CX
	MOVQ  40(BX), R8
	MOVQ  48(BX), R9
	MOVQ  0(BX), R10
	XORL  AX, AX
	CALL  R10
	MOVQ  AX, 104(BX)
	LEAQ  -16(BP), SP
	POPQ  R12
	POPQ  BX
	POPQ  BP
	RET
