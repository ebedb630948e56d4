"""The CPU's native bfloat16 (golden/cpu.py): flags read from /proc/cpuinfo texts of x86 and Arm machines."""

from vrex.golden.cpu import cpu_flags, native_bfloat16

AVX2_ONLY = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n"
SAPPHIRE = "processor\t: 0\nflags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
ZEN4 = "processor\t: 0\nflags\t\t: avx2 avx512f avx512_bf16\n"
NEOVERSE = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes sha2 bf16 i8mm\n"
OLD_ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes\n"


def test_flags_are_read_from_every_processor():
    assert cpu_flags(AVX2_ONLY) == frozenset({"fpu", "sse2", "avx", "avx2", "fma"})
    assert "bf16" in cpu_flags(NEOVERSE)


def test_native_bfloat16_from_the_flags():
    assert native_bfloat16(AVX2_ONLY) is False
    assert native_bfloat16(OLD_ARM) is False
    assert native_bfloat16(SAPPHIRE) is True
    assert native_bfloat16(ZEN4) is True
    assert native_bfloat16(NEOVERSE) is True


def test_a_text_without_flags_is_unknown():
    assert native_bfloat16("processor\t: 0\nmodel name\t: something\n") is None
    assert native_bfloat16("") is None
