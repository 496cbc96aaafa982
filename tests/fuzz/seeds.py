#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the fuzz target's seed corpus: one small input per status, layout, scale and value
class, encoded the way the target (tests/fuzz/) decodes them (keep the two in step; the call
numbers are the rows of kCalls in fuzz_api.cpp). Element values are left to the target's
input-seeded stream, so the files stay a few dozen bytes.

    python3 tests/fuzz/seeds.py tests/fuzz/corpus
"""
import os
import struct
import sys

C, CPP, QUERIES, KCACHE, ATTENTION, F16C, F16CPP = 0, 1, 2, 3, 4, 5, 6
S8, CONVERT, F16_OUT, QUANTIZE, PARALLEL, KCACHE_F16, KCACHE_S8 = 7, 8, 9, 10, 11, 12, 13
BF16C, KCACHE_BF16, OUTPUT = 14, 15, 16

# Cap codes (decode_cap): c % 8 in 0, 1 -> best; 2..5 -> family level (c >> 3) % n; 6 -> another
# family's level; 7 -> the next byte as is.
CAP_BEST = bytes([0])


def cap_family(i):
    return bytes([2 | (i << 3)])


CAP_FOREIGN = bytes([6])


def cap_raw(v):
    return bytes([7, v])


def rows(n, small_max=19):
    """A small n_q / n_k (decode_rows)."""
    if n < 20:
        return bytes([n])
    for c in range(0x80, 0xF0):
        if c % (small_max + 1) == n:
            return bytes([c])
    raise ValueError(n)


def huge(which, extra=b""):
    """A size at size_t's edges (decode_rows / decode_d codes 0xf0 + which)."""
    return bytes([0xF0 + which]) + extra


def dim(d):
    """d (decode_d)."""
    if d < 40:
        return bytes([d])
    if d < 600:
        return bytes([0xD8]) + struct.pack("<H", d - 40)
    return bytes([0xE8]) + struct.pack("<H", d - 600)


# Strides (decode_stride), relative to the row length.
TIGHT, PAD1, PAD3, PAD7, PAD17 = bytes([0]), bytes([4]), bytes([5]), bytes([6]), bytes([7])
SHORT, ZERO = bytes([8]), bytes([10])


def stride_huge(which):
    return bytes([11, which])


def stride_wrap(delta):
    return bytes([13, delta])


# Layout byte: bits 0-1 S alone (0) / in Q's arena (2) / in K's (3); bit 2 K in Q's arena;
# bits 3-5 where S goes against its partner; bits 6-7 where K goes against Q.
S_AFTER, S_BEFORE, S_ON_LAST, S_LAST_ON_FIRST, S_SAME, S_INSIDE = 0, 1, 2, 3, 4, 5


def layout(s_with=None, s_snap=0, k_with_q=False, k_snap=0):
    b = {None: 0, "q": 2, "k": 3}[s_with] | (s_snap << 3)
    if k_with_q:
        b |= 4 | (k_snap << 6)
    return bytes([b])


def nulls(q=False, k=False, s=False):
    return bytes([0xF8 | q | k << 1 | s << 2]) if (q or k or s) else bytes([0])


# Scale codes (decode_scale).
SC_DEFAULT, SC_NEG0, SC_NAN, SC_INF, SC_NINF = 0, 5, 6, 7, 8
SC_DENORM_MIN, SC_DENORM, SC_MAX, SC_MINUS1, SC_ONE = 9, 10, 11, 12, 13


def scale_bits(f):
    return bytes([14]) + struct.pack("<f", f)


# Value modes: 0 small ints, 1 scaled ints, 2 specials, 3 raw bits, 4 full mantissas, 5 mixed.
INTS, SCALED, SPECIALS, RAW, MANTISSAS, MIXED = range(6)


def scores(call, n_q, n_k, d, cap=CAP_BEST, mis=0, ldq=TIGHT, ldk=TIGHT, lds=TIGHT,
           lay=layout(), nul=nulls(), r_s=0, r_k=0, leads=0, scale=SC_DEFAULT,
           block=(0, 0, 0, 0), q_mode=INTS, k_mode=INTS, q_exp=0, k_exp=0, flush=False):
    sc = scale if isinstance(scale, bytes) else bytes([scale])
    return (bytes([call]) + cap + n_q + n_k + d + bytes([mis]) + ldq + ldk + lds + lay + nul +
            struct.pack("<HHH", r_s, r_k, leads) + sc + bytes(block) +
            bytes([q_mode, k_mode, exp_byte(q_exp), exp_byte(k_exp), 3 if flush else 0]))


def exp_byte(e):
    """The byte the target decodes (as int8 * 5 / 4, rounded to 0) to exponent e."""
    for b in range(-128, 128):
        if int(b * 5 / 4) == e:
            return b & 0xFF
    raise ValueError(e)


def key_block(n, ldk=None, mode=INTS, exp=0, null=False, inside=None, token_major=False,
              pad=0, kmode=None):
    """One append (fuzz_cache): n keys of every head, their layout (head-major rows of d + pad,
    token-major, or the stride ldk) and values; null keys, or keys placed at byte `inside`
    (about) of the cache's memory; kmode 0xff NULL tensor, 0xfd NULL scales, 0xfc another dtype,
    0x18 bits a scale stride of 2, 0x60 bits scales of every class."""
    if kmode is None:
        kmode = 0xFE if null else (7 if inside is not None else 0)
    lmode = pad % 3 | (4 if token_major else 0) | (0xF0 if ldk is not None else 0)
    extra = ldk if ldk is not None else b""
    extra += struct.pack("<H", inside) if inside is not None else b""
    return rows(n, 69) + bytes([kmode, lmode, mode, exp_byte(exp)]) + extra


def kcache(d, capacity, appends=(), cap=CAP_BEST, mem=0, offset=0, null_mem=False,
           null_out=False, handle=None, big_capacity=None, truncate=0, n_q=1, q_mode=0, g=1,
           smode=0, s_inside=None, scale=SC_DEFAULT, call=KCACHE, heads=1, shape=0):
    """The cache (fuzz_cache): bytes query and init (mem: 0 exact, 1 a byte short, 2 | extra << 2
    a few more, 3 | n << 2 just n bytes) for `heads` heads (1 ... 4) or shape codes (0xf1 an
    unknown kind, 0xf0 an unknown dtype, 0x70 zero heads); appends; the size and a truncate
    (0xc0 + to: to % (size + 1); >= 0xf8 past the size); attention from the cache with g query
    heads per KV head (smode: bit 3 softmax, bits 6-7 the mask, % 8 == 4 one key fewer, 5 one
    more, 6 S inside the cache's memory). handle: None (the cache), or the byte that picks NULL
    (3), foreign memory (1, 2) or the cache shifted by 1 + h / 4 % 15 bytes (h % 4 == 0); it is
    read whenever init fails."""
    mem_mode = mem | (0xC0 if big_capacity is not None else 0)
    cache_mode = offset | (0x38 if null_mem else 0x30 if null_out else 0)
    shape_mode = shape if shape else heads - 1
    huge_capacity = isinstance(capacity, bytes)
    init_fails = (null_mem or null_out or mem == 1 or (mem & 3) == 3 or d == bytes([0]) or
                  capacity == 0 or huge_capacity or shape >= 0x70)
    if handle is not None and not init_fails:
        cache_mode |= 0x80
    cap_bytes = capacity if huge_capacity else rows(capacity, 69)
    out = bytes([call]) + cap + d + cap_bytes + bytes([mem_mode, cache_mode, shape_mode])
    if big_capacity is not None:
        out += struct.pack("<H", big_capacity)
    if handle is not None or init_fails:
        out += bytes([handle if handle is not None else 3])
    out += bytes([len(appends)]) + b"".join(appends)
    out += bytes([truncate])
    if s_inside is not None:
        smode = (smode & ~7) | 6
    sc = scale if isinstance(scale, bytes) else bytes([scale])
    out += bytes([q_mode << 4 | (g - 1), smode, n_q - 1]) + sc
    if s_inside is not None:
        out += struct.pack("<H", s_inside)
    return out


# Attention strides (decode_attn_stride): the layout's default, short by 1 + i, or huge.
A_DEFAULT = bytes([0])


def a_short(i=0):
    return bytes([0xE0 + i])


def a_huge(which, extra=b""):
    return bytes([0xF0 + which]) + extra


# Softcap codes (decode_softcap).
CAP_NONE, CAP_1_5, CAP_30, CAP_NEG, CAP_NAN, CAP_INF, CAP_DENORM, CAP_NEG0 = 0, 8, 9, 10, 11, 12, 13, 15


def attn(hq, hkv, n_q, n_k, d, lay=0, strides=(A_DEFAULT,) * 6, scale=SC_DEFAULT,
         softcap=CAP_NONE, mask=0, flags=0, p0=bytes([0]), w=bytes([0]), nul=0, place=0,
         cap=CAP_BEST, dt=0, ksrc=0, scm=0, par=0, call=ATTENTION, head=b""):
    """An attention case (attention_case): layout bits 0-1 Q, 2-3 K, 4-5 S (0 head-major,
    1 padded, 2 token-major); p0 and w are codes (p0 % (n_k + 4), w % 9, or huge); flags bit 0
    softmax, 0x70 f16 accumulation, 0x60 the bf16 dot product; dt % 3 Q and K's dtype (f32, f16, s8; bits 3-4 01 bf16),
    bit 2 f16 S (bits 3-4 10 bf16 S, an error), 0xff no dtype; ksrc % 4 == 3 K from a cache
    ((ksrc >> 2) % 8: 4 other heads, 5 other d, 6 a key short, 7 a foreign handle), >= 0xf0 K of
    another dtype ((Q's + 1 + ksrc % 3) % 4); scm bits 0-1 Q's scales, 2-3 K's
    (0 per row, 1 per head, 2 per tensor, 3 a bad stride), >= 0xf0 a bad value; par % 4 == 1
    through a hook (% 16 == 13 without parallel_for). head: the parallel section's bytes."""
    sc = scale if isinstance(scale, bytes) else bytes([scale])
    return (bytes([call]) + cap + head + bytes([hq, hkv, n_q, n_k, d, lay]) +
            b"".join(strides) + sc + bytes([softcap, mask, flags]) + p0 + w +
            bytes([nul, place, dt, ksrc, scm, par]))


def attention_seeds(s):
    b = lambda v: bytes([v])
    tok, pad = 0x2A, 0x15
    s["attn_ok_mha"] = attn(3, 3, 5, 9, 8)
    s["attn_ok_gqa_causal_softmax"] = attn(8, 2, 6, 17, 16, mask=1, flags=1, p0=b(11))
    s["attn_ok_gqa_causal_scores"] = attn(8, 2, 9, 35, 17, mask=1, p0=b(0))
    s["attn_ok_decode_window_softcap"] = attn(4, 1, 1, 33, 32, mask=2, flags=1, softcap=CAP_1_5,
                                              p0=b(32), w=b(5))
    s["attn_ok_mqa_decode_token_major"] = attn(8, 1, 1, 30, 24, lay=tok, mask=1, p0=b(29))
    s["attn_ok_padded_window"] = attn(4, 2, 7, 21, 5, lay=pad, mask=3, p0=b(14), w=b(3),
                                      softcap=CAP_30)
    s["attn_ok_fully_masked_rows"] = attn(2, 1, 3, 6, 4, mask=2, flags=1, p0=b(9), w=b(1))
    s["attn_ok_offset_past_keys"] = attn(2, 2, 4, 5, 7, mask=1, flags=1, p0=b(8))
    s["attn_ok_neg_zero_softcap"] = attn(2, 1, 2, 3, 4, softcap=CAP_NEG0, scale=SC_MINUS1)
    s["attn_noop_zero_heads"] = attn(0, 0, 3, 3, 0, nul=0xFF, softcap=CAP_NAN)
    s["attn_err_zero_dim"] = attn(2, 1, 3, 3, 0)
    s["attn_err_null_k"] = attn(2, 1, 3, 3, 4, nul=0xFA)
    s["attn_err_heads_mismatch"] = attn(6, 4, 2, 3, 4)
    s["attn_err_heads_kv_zero"] = attn(4, 0, 2, 3, 4)
    s["attn_err_bad_ldq"] = attn(2, 1, 2, 3, 4, strides=(A_DEFAULT, a_short()) + (A_DEFAULT,) * 4)
    s["attn_err_bad_lds"] = attn(2, 1, 2, 3, 4, strides=(A_DEFAULT,) * 5 + (a_short(),))
    s["attn_err_head_stride_q"] = attn(2, 1, 2, 3, 4, strides=(a_short(1),) + (A_DEFAULT,) * 5)
    s["attn_err_head_stride_s_token_major"] = attn(4, 2, 2, 3, 4, lay=tok,
                                                   strides=(A_DEFAULT,) * 5 + (a_short(2),))
    s["attn_err_scale_nan"] = attn(2, 1, 2, 3, 4, scale=SC_NAN)
    for name, code in [("neg", CAP_NEG), ("nan", CAP_NAN), ("inf", CAP_INF),
                       ("denorm", CAP_DENORM)]:
        s["attn_err_softcap_" + name] = attn(2, 1, 2, 3, 4, softcap=code)
    s["attn_err_flags_mask"] = attn(2, 1, 2, 3, 4, mask=0xF8)
    s["attn_err_flags_flags"] = attn(2, 1, 2, 3, 4, flags=0xF9)
    s["attn_err_window_zero"] = attn(2, 1, 2, 3, 4, mask=2, w=b(0))
    s["attn_err_position_overflow"] = attn(2, 1, 3, 3, 4, mask=1, p0=b(0xF0))
    s["attn_ok_huge_offset_no_mask"] = attn(2, 1, 3, 3, 4, p0=b(0xF0))
    s["attn_err_size_overflow"] = attn(2, 2, 2, 3, 4, strides=(A_DEFAULT,) * 2 + (a_huge(2),) +
                                       (A_DEFAULT,) * 3)
    s["attn_err_overlap_s_in_q"] = attn(2, 1, 2, 3, 4, place=0xF3)
    # Every dtype (dt % 3: f32, f16, s8; 8: bf16; bit 2: f16 S), raw K or a cache, scales, par.
    for dt, name in [(1, "f16"), (2, "s8"), (4, "f32_s16"), (5, "f16_s16"), (6, "s8_s16"),
                     (8, "bf16"), (12, "bf16_s16")]:
        s["attn_%s_ok_gqa_causal_softmax" % name] = attn(8, 2, 6, 17, 16, mask=1, flags=1,
                                                         p0=b(11), dt=dt)
        s["attn_%s_ok_decode_window_softcap" % name] = attn(4, 1, 1, 33, 32, mask=2,
                                                            softcap=CAP_1_5, p0=b(32), w=b(5),
                                                            dt=dt)
        s["attn_%s_ok_padded_scores" % name] = attn(4, 2, 7, 21, 5, lay=pad, mask=3, p0=b(14),
                                                    w=b(3), dt=dt)
        s["attn_%s_ok_token_major" % name] = attn(8, 1, 1, 30, 24, lay=tok, mask=1, p0=b(29),
                                                  dt=dt)
        s["attn_%s_err_overlap" % name] = attn(2, 1, 2, 3, 4, place=0xF3, dt=dt)
        s["attn_%s_err_null_k" % name] = attn(2, 1, 3, 3, 4, nul=0xFA, dt=dt)
        s["attn_%s_err_size_overflow" % name] = attn(2, 2, 2, 3, 4, strides=(A_DEFAULT,) * 2 +
                                                     (a_huge(2),) + (A_DEFAULT,) * 3, dt=dt)
        for v, vname in [(0, "ok"), (4 << 2, "err_heads"), (5 << 2, "err_d"), (6 << 2, "err_short"),
                         (7 << 2, "err_foreign")]:
            s["attn_%s_cache_%s" % (name, vname)] = attn(6, 3, 5, 19, 12, mask=1, flags=1,
                                                         p0=b(18), dt=dt, ksrc=3 | v | 0x40)
        s["attn_%s_par" % name] = attn(4, 2, 9, 33, 16, dt=dt, par=0x31)
        s["attn_%s_par_no_fn" % name] = attn(4, 2, 3, 5, 8, dt=dt, par=0x0D)
        s["attn_%s_err_dtype_mismatch" % name] = attn(2, 1, 2, 3, 4, dt=dt, ksrc=0xF0)
        s["attn_%s_err_cache_dtype_mismatch" % name] = attn(2, 1, 2, 3, 4, dt=dt, ksrc=0xF3)
    s["attn_err_unknown_dtype"] = attn(2, 1, 2, 3, 4, dt=0xFF)
    # The two 16-bit floats against each other (ksrc % 3 == 1), bf16 S, f16 accumulation on bf16.
    for dt, name in [(1, "f16"), (8, "bf16")]:
        s["attn_%s_err_other_16bit_k" % name] = attn(2, 1, 2, 3, 4, dt=dt, ksrc=0xF1)
        s["attn_%s_err_other_16bit_cache" % name] = attn(2, 1, 2, 3, 4, dt=dt, ksrc=0xF7)
    s["attn_err_bf16_s"] = attn(2, 1, 2, 3, 4, dt=0x12)
    s["attn_err_f16_accumulate_on_bf16"] = attn(2, 1, 2, 3, 4, flags=0x70, dt=8)
    s["attn_err_f16_accumulate_on_f32"] = attn(2, 1, 2, 3, 4, flags=0x70)
    s["attn_f16_accumulate"] = attn(4, 2, 5, 20, 32, flags=0x71, dt=1)
    s["attn_f16_accumulate_cache"] = attn(4, 2, 5, 20, 32, flags=0x70, dt=1, ksrc=3)
    # The bf16 dot product (flags bits 5-6 alone): bf16 Q only; a cache takes the default path.
    s["attn_bf16_dot"] = attn(4, 2, 5, 40, 33, flags=0x61, dt=8)
    s["attn_bf16_dot_decode"] = attn(4, 1, 1, 70, 64, mask=1, flags=0x60, dt=8, p0=b(69))
    s["attn_bf16_dot_cache"] = attn(4, 2, 5, 20, 32, flags=0x60, dt=8, ksrc=3)
    s["attn_err_bf16_dot_on_f16"] = attn(2, 1, 2, 3, 4, flags=0x60, dt=1)
    s["attn_err_bf16_dot_on_f32"] = attn(2, 1, 2, 3, 4, flags=0x60)
    for scm, name in [(0x00, "rows"), (0x05, "heads"), (0x0A, "tensor"), (0x03, "bad_q_count"),
                      (0x0C, "bad_k_count"), (0xF0, "bad_q_value"), (0xF3, "bad_k_value")]:
        s["attn_s8_scales_" + name] = attn(4, 2, 5, 11, 9, dt=2, scm=scm)
    s["attn_s8_err_null_q_scale"] = attn(2, 1, 2, 3, 4, dt=2, nul=0xF1)
    s["attn_s8_err_null_k_scale"] = attn(2, 1, 2, 3, 4, dt=2, nul=0xF2)


def out(hq, hkv, n_q, n_k, d, dv=0, lay=0, strides=(A_DEFAULT,) * 8, scale=SC_DEFAULT,
        softcap=CAP_NONE, mask=0, flags=0, p0=bytes([0]), w=bytes([0]), nul=0, place=0, dt=0,
        ksrc=0, vsrc=0, vt=0, ot=0, scm=0, sk=0, lb=0, par=0, cap=CAP_BEST):
    """An attention-output case (fuzz_attention_output): n_k below 40, or 200 ... 710 (even);
    d 0xff: ATTNSCORE_S8_MAX_D + 1; dv 0 (d), 1 ... 39, 0xf0 ATTNSCORE_ATTN_OUT_MAX_DV, 0xf1 one
    more, 0xf2 huge; lay bits 0-1 Q, 2-3 K, 4-5 V, 6-7 O (0 head-major, 1 and 3 padded, 2
    token-major); strides q, k, v, o (head, row) as attn's; dt, ksrc as attn's, and ksrc, vsrc
    % 4 == 3 from a cache ((>> 2) % 8: 0 ... 2 fits, 3 shifted handle, 4 heads, 5 d, 6 a token
    short, 7 the other kind); vt % 4 V's dtype (f32, f16, s8, bf16), >= 0xf8 none, bits 4-5 its
    scales (0 per key, 1 per head, 2 per tensor, 3 a bad stride); ot % 8: 0-3 f32, 4-5 f16, 6
    bf16, 7 none (bit 3: s8); scm: Q's (bits 0-1) and K's (2-3) scales, >= 0xf0 a bad scale of
    Q, K or V (scm % 3); sk % 8: 0 NULL, 1 all -Inf, else finite, and sk >= 0xc0 one head's
    -Inf, +Inf, NaN, -NaN, 1e30, -1e30, a subnormal, FLT_MAX ((sk >> 3) % 8); lb < 0x80 no lse,
    else % 4 head-major, token-major, padded, overlapping heads (>= 0xf0 huge head stride);
    nul >= 0xf8 NULL Q, K, V data (bits 0-2), 0xf0 ... their scales, 0xe8 ... O (bit 0) or the
    descriptor (bit 1); place 0xe0 O in Q, 0xe8 O in V, 0xf0 O on the sinks, 0xf4 lse in O,
    0xf8 lse in K, 0xfc lse in Q; par >= 0x80: 1 + par % 16 threads, order (par >> 4) % 4, bit
    6 no parallel_for."""
    sc = scale if isinstance(scale, bytes) else bytes([scale])
    nk = bytes([n_k]) if n_k < 40 else bytes([0xC0, (n_k - 200) // 2])
    dvb = dv if isinstance(dv, bytes) else bytes([dv])
    return (bytes([OUTPUT]) + cap + bytes([hq, hkv, n_q]) + nk + bytes([d]) + dvb +
            bytes([lay]) + b"".join(strides) + sc + bytes([softcap, mask, flags]) + p0 + w +
            bytes([nul, place, dt, ksrc, vsrc, vt, ot, scm, sk, lb, par]))


def output_seeds(s):
    b = lambda v: bytes([v])
    st = lambda i, code: tuple(code if j == i else A_DEFAULT for j in range(8))
    tok, pad = 0xAA, 0x55
    # Valid calls: decode and prefill, GQA, masks, softcap, dv, lse layouts, long rows (chunks).
    s["out_ok_mha"] = out(3, 3, 5, 9, 8)
    s["out_ok_gqa_prefill_causal"] = out(8, 2, 6, 17, 16, mask=1, p0=b(11), lb=0x80)
    s["out_ok_decode_causal"] = out(4, 1, 1, 33, 32, mask=1, p0=b(32), lb=0x80)
    s["out_ok_decode_long_rows"] = out(2, 1, 1, 600, 16, dv=24, lb=0x81)
    s["out_ok_prefill_long_rows"] = out(2, 1, 4, 500, 8, lb=0x82, par=0x83)
    s["out_ok_window_softcap"] = out(4, 2, 7, 21, 5, lay=pad, mask=3, p0=b(14), w=b(3),
                                     softcap=CAP_1_5, lb=0x81)
    s["out_ok_token_major"] = out(8, 1, 1, 30, 24, lay=tok, mask=1, p0=b(29), lb=0x80)
    s["out_ok_dv_differs"] = out(4, 2, 3, 10, 8, dv=24, lb=0x82)
    s["out_ok_dv_max"] = out(1, 1, 2, 8, 4, dv=0xF0, lb=0x80)
    s["out_ok_softcap_scale"] = out(2, 1, 3, 7, 6, softcap=CAP_30, scale=SC_MINUS1, lb=0x80)
    s["out_ok_no_visible_key"] = out(2, 1, 3, 6, 4, mask=2, p0=b(9), w=b(1), lb=0x80)
    s["out_ok_no_visible_key_sink"] = out(2, 1, 3, 6, 4, mask=2, p0=b(9), w=b(1), lb=0x80,
                                          sk=2)
    s["out_ok_huge_offset_no_mask"] = out(2, 1, 3, 3, 4, p0=b(0xF0))
    s["out_ok_f16_accumulate"] = out(4, 2, 5, 20, 32, flags=0x70, dt=1, lb=0x80)
    s["out_ok_bf16_dot"] = out(4, 2, 5, 20, 32, flags=0x60, dt=8, lb=0x80)
    s["out_ok_softmax_flag_ignored"] = out(2, 1, 3, 5, 4, flags=1, lb=0x80)
    # Sinks: finite, all -Inf, one head's -Inf, huge, tiny, FLT_MAX.
    s["out_ok_sinks"] = out(4, 2, 5, 12, 8, sk=2, lb=0x80)
    s["out_ok_sinks_f16_o"] = out(4, 2, 5, 12, 8, sk=3, lb=0x81, ot=4)
    s["out_ok_sinks_all_neg_inf"] = out(4, 2, 5, 12, 8, sk=1, lb=0x80)
    for code, name in [(0, "neg_inf"), (4, "1e30"), (5, "minus_1e30"), (6, "subnormal"),
                       (7, "flt_max")]:
        s["out_ok_sink_" + name] = out(4, 2, 3, 9, 8, sk=0xC2 | code << 3, lb=0x80, mask=1,
                                       p0=b(3))
    # O f16; V of every dtype and scale layout; Q and K of every dtype.
    s["out_ok_f16_o"] = out(4, 2, 6, 17, 16, mask=1, p0=b(11), ot=4, lb=0x80)
    for vt, name in [(1, "f16"), (2, "s8_per_key"), (0x12, "s8_per_head"), (0x22, "s8_per_tensor"),
                     (3, "bf16")]:
        s["out_ok_v_" + name] = out(4, 2, 5, 13, 8, dv=12, vt=vt, lb=0x80, mask=1, p0=b(7))
    for dt, name in [(1, "f16"), (2, "s8"), (8, "bf16")]:
        s["out_ok_qk_" + name] = out(4, 2, 5, 13, 8, dt=dt, vt=dt % 4 if dt != 8 else 3,
                                     lb=0x80, sk=2)
        s["out_ok_qk_%s_key_cache" % name] = out(6, 3, 5, 19, 12, mask=1, p0=b(18), dt=dt,
                                                 ksrc=0x43, lb=0x80)
    # Value caches (and key caches), every V dtype.
    for vt, name in [(0, "f32"), (1, "f16"), (2, "s8"), (3, "bf16")]:
        s["out_ok_value_cache_" + name] = out(4, 2, 5, 19, 8, dv=16, vsrc=0x43, vt=vt, mask=1,
                                              p0=b(14), lb=0x80)
        s["out_ok_both_caches_" + name] = out(4, 1, 1, 33, 16, vsrc=0x47, ksrc=0x4B, vt=vt,
                                              dt=vt if vt != 3 else 8, lb=0x80, sk=2)
    s["out_ok_value_cache_long"] = out(2, 1, 1, 500, 8, vsrc=3, ksrc=3, lb=0x80)
    # Parallel: 1, 2, 7 and 16 threads in every task order, and no parallel_for.
    for par in (0x80, 0x91, 0xA6, 0xBF):
        s["out_par_%02x" % par] = out(4, 2, 9, 33, 16, par=par, lb=0x80, sk=2)
    s["out_par_decode_gqa"] = out(8, 1, 1, 300, 8, par=0x8F, lb=0x81)
    s["out_err_par_no_fn"] = out(4, 2, 3, 5, 8, par=0xC1)
    s["out_noop_par_no_fn"] = out(4, 2, 3, 0, 8, par=0xC1)
    # No-ops, whatever the rest.
    s["out_noop_zero_keys"] = out(2, 1, 3, 0, 4, nul=0xFF, scale=SC_NAN, dv=0xF1)
    s["out_noop_zero_heads"] = out(0, 0, 3, 3, 0, nul=0xE9, sk=0xCA)
    # Every error status.
    s["out_err_null_desc"] = out(2, 1, 3, 3, 4, nul=0xEA)
    s["out_err_null_o"] = out(2, 1, 3, 3, 4, nul=0xE9)
    s["out_err_null_q"] = out(2, 1, 3, 3, 4, nul=0xF9)
    s["out_err_null_v"] = out(2, 1, 3, 3, 4, nul=0xFC)
    s["out_err_null_v_scales"] = out(2, 1, 3, 3, 4, nul=0xF4, vt=2)
    s["out_err_zero_dim"] = out(2, 1, 3, 3, 0)
    s["out_err_dim_too_large"] = out(2, 1, 3, 3, 0xFF, dt=2)
    s["out_err_unknown_qk"] = out(2, 1, 2, 3, 4, dt=0xFF)
    s["out_err_unknown_v"] = out(2, 1, 2, 3, 4, vt=0xF8)
    s["out_err_unknown_v_minus_1"] = out(2, 1, 2, 3, 4, vt=0xFA)
    s["out_err_o_bf16"] = out(2, 1, 2, 3, 4, ot=6)
    s["out_err_o_s8"] = out(2, 1, 2, 3, 4, ot=0x0F)
    s["out_err_o_none"] = out(2, 1, 2, 3, 4, ot=7)
    s["out_err_dtype_mismatch"] = out(2, 1, 2, 3, 4, ksrc=0xF0)
    for v, name in [(3, "shifted"), (4, "heads"), (5, "d"), (6, "short"), (7, "other_kind")]:
        s["out_err_key_cache_" + name] = out(4, 2, 3, 9, 8, ksrc=3 | v << 2, lb=0x80)
        s["out_err_value_cache_" + name] = out(4, 2, 3, 9, 8, dv=12, vsrc=3 | v << 2, vt=1,
                                               lb=0x80)
    s["out_err_value_cache_dv_default"] = out(4, 2, 3, 9, 8, vsrc=3 | 5 << 2, vt=2)
    s["out_err_heads_mismatch"] = out(6, 4, 2, 3, 4)
    s["out_err_bad_ldq"] = out(2, 1, 2, 3, 4, strides=st(1, a_short()))
    s["out_err_bad_ldk"] = out(2, 1, 2, 3, 4, strides=st(3, a_short()))
    s["out_err_bad_ldv"] = out(2, 1, 2, 3, 4, dv=6, strides=st(5, a_short(1)))
    s["out_err_bad_ldo"] = out(2, 1, 2, 3, 4, dv=6, strides=st(7, a_short()))
    s["out_err_v_scale_count"] = out(2, 1, 2, 3, 4, vt=0x32)
    s["out_err_q_scale_count"] = out(2, 1, 2, 3, 4, dt=2, scm=3)
    s["out_err_scale_nan"] = out(2, 1, 2, 3, 4, scale=SC_NAN)
    s["out_err_softcap_neg"] = out(2, 1, 2, 3, 4, softcap=CAP_NEG)
    s["out_err_flags_mask"] = out(2, 1, 2, 3, 4, mask=0xF8)
    s["out_err_flags_flags"] = out(2, 1, 2, 3, 4, flags=0xF9)
    s["out_err_f16_accumulate_on_f32"] = out(2, 1, 2, 3, 4, flags=0x70)
    s["out_err_window_zero"] = out(2, 1, 2, 3, 4, mask=2, w=b(0))
    s["out_err_position_overflow"] = out(2, 1, 3, 3, 4, mask=1, p0=b(0xF0))
    for code, name in [(1, "pos_inf"), (2, "nan"), (3, "neg_nan")]:
        s["out_err_sink_" + name] = out(4, 2, 3, 5, 4, sk=0xC2 | code << 3, lb=0x80)
    s["out_err_sink_before_head_stride"] = out(4, 2, 3, 5, 4, sk=0xCA, lb=0x83)
    s["out_err_head_stride_o"] = out(2, 1, 2, 3, 4, strides=st(6, a_short(1)))
    s["out_err_head_stride_o_token_major"] = out(4, 2, 2, 3, 4, lay=0x80,
                                                 strides=st(7, a_short(2)))
    s["out_err_head_stride_v"] = out(2, 2, 2, 3, 4, strides=st(4, a_short(1)))
    s["out_err_head_stride_lse"] = out(3, 1, 4, 3, 4, lb=0x83)
    s["out_err_size_overflow_v"] = out(2, 2, 2, 3, 4, strides=st(4, a_huge(2)))
    s["out_err_size_overflow_o"] = out(2, 1, 2, 3, 4, strides=st(6, a_huge(2)))
    s["out_err_size_overflow_lse"] = out(4, 2, 2, 3, 4, lb=0xF2)
    for place, name in [(0xE0, "o_in_q"), (0xE9, "o_in_v"), (0xF1, "o_on_sinks"),
                        (0xF4, "lse_in_o"), (0xF9, "lse_in_k"), (0xFE, "lse_in_q")]:
        s["out_err_overlap_" + name] = out(2, 1, 2, 3, 4, place=place, lb=0x80, sk=2)
    s["out_err_quant_scale_v"] = out(2, 1, 2, 3, 4, vt=2, scm=0xF2)
    s["out_err_quant_scale_q"] = out(2, 1, 2, 3, 4, dt=2, scm=0xF0)
    s["out_err_row_too_long"] = out(2, 1, 2, 3, 4, dv=0xF1)
    s["out_err_row_too_long_huge"] = out(2, 1, 2, 3, 4, dv=0xF2)
    s["out_err_row_too_long_before_dtype"] = out(2, 1, 2, 3, 4, dv=0xF1, ot=7, nul=0xE9)


# int8 (fuzz_s8): scale counts (decode_scale_count) and value modes.
CNT_ONE, CNT_N, CNT_N_PLUS_1, CNT_N_MINUS_1, CNT_ZERO = 0, 4, 14, 6, 7
S8_RAW, S8_EXTREMES, S8_MIN, S8_SMALL = 0, 1, 2, 3
QS_NORMAL, QS_SPECIALS, QS_RAW, QS_TINY_HUGE = 0, 0xF4, 0xF5, 0xF6


def s8(n_q, n_k, d, edge=0, qn=CNT_ONE, kn=CNT_ONE, ldq=TIGHT, ldk=TIGHT, lds=TIGHT, lay=0,
       nul=0, r=(0, 0, 0, 0), leads=0, scale=SC_DEFAULT, q_mode=S8_RAW, k_mode=S8_RAW,
       qs_mode=QS_NORMAL, ks_mode=QS_NORMAL, flush=False, cap=CAP_BEST):
    """An int8 scores case. lay: bit 0 K in Q's arena (bits 1-3 where), bit 4 S against a
    partner (bits 5-7: 0 Q, 1 K, 3 Q's scales, 4 K's scales)."""
    sc = scale if isinstance(scale, bytes) else bytes([scale])
    return (bytes([S8]) + cap + n_q + n_k + d + bytes([edge, qn, kn]) + ldq + ldk + lds +
            bytes([lay, nul]) + struct.pack("<HHHHH", *r, leads) + sc +
            bytes([q_mode, k_mode, qs_mode, ks_mode, 3 if flush else 0]))


def s8_seeds(s):
    r, d = rows, dim
    s["s8_ok_per_tensor"] = s8(r(3), r(5), d(7))
    s["s8_ok_per_row_per_key"] = s8(r(9), rows(37, 69), d(19), qn=CNT_N, kn=CNT_N, ldq=PAD3,
                                    ldk=PAD7, lds=PAD1)
    s["s8_ok_tile_edges_extremes"] = s8(r(17), rows(65, 69), d(33), q_mode=S8_EXTREMES,
                                        k_mode=S8_EXTREMES, kn=CNT_N)
    s["s8_ok_chunks_of_d"] = s8(r(2), r(3), d(1030), q_mode=S8_MIN, k_mode=S8_MIN)
    s["s8_ok_d_limit"] = s8(r(1), r(1), d(0), edge=0xFE, q_mode=S8_MIN, k_mode=S8_MIN)
    s["s8_ok_d_limit_less_one"] = s8(r(1), r(1), d(0), edge=0xFD, q_mode=S8_EXTREMES)
    s["s8_ok_scales_tiny_huge"] = s8(r(4), r(6), d(8), qs_mode=QS_TINY_HUGE, ks_mode=QS_TINY_HUGE,
                                     scale=scale_bits(3e-20), flush=True)
    s["s8_ok_q_is_k"] = s8(r(6), r(6), d(12), lay=1 | 4 << 1)
    s["s8_ok_misaligned"] = s8(r(5), r(7), d(9), leads=0x9AB, ldq=PAD1, lds=PAD17)
    for i in range(5):
        s["s8_cap_family_%d" % i] = s8(r(9), r(17), d(20), cap=cap_family(i), kn=CNT_N)
    s["s8_err_zero_dim"] = s8(r(2), r(2), d(0))
    s["s8_err_dim_too_large"] = s8(r(1), r(1), d(0), edge=0xFF)
    s["s8_err_null_q_scale"] = s8(r(2), r(2), d(4), nul=0xF8)
    s["s8_err_null_k_scale"] = s8(r(2), r(2), d(4), nul=0xF0)
    s["s8_err_bad_ldk"] = s8(r(2), r(2), d(4), ldk=SHORT)
    s["s8_err_count_zero"] = s8(r(2), r(3), d(4), qn=CNT_ZERO)
    s["s8_err_count_n_plus_1"] = s8(r(2), r(3), d(4), kn=CNT_N_PLUS_1)
    s["s8_err_count_huge"] = s8(r(2), r(3), d(4), kn=0xF7, lds=bytes([0]) )
    s["s8_err_scale_nan"] = s8(r(2), r(2), d(2), scale=SC_NAN)
    s["s8_err_overlap_s_on_k_scales"] = s8(r(2), r(3), d(4), kn=CNT_N, lay=0x10 | 4 << 5,
                                           r=(2, 0, 0, 0))
    s["s8_err_overlap_s_on_q"] = s8(r(3), r(3), d(8), lay=0x10, r=(4, 0, 0, 0))
    s["s8_err_quant_scale_raw"] = s8(r(2), r(3), d(4), qn=CNT_N, qs_mode=QS_RAW)
    s["s8_err_quant_scale_specials"] = s8(r(3), r(3), d(4), kn=CNT_N, ks_mode=QS_SPECIALS)
    # Converters: mode bit 0 f16 -> f32, bits 1-2 == 3 flushing, bit 3 f32 values at the edges;
    # place 0xff/0xfe NULL, 0xe_ one buffer (destination at 4 * (place % 16) bytes); pair bit 0
    # bf16 instead of f16.
    conv = lambda mode, place, n, extra=b"", pair=0: (bytes([CONVERT]) + CAP_BEST +
                                                      bytes([mode, place, n]) + extra +
                                                      bytes([pair]))
    s["conv_f16_to_f32"] = conv(1, 0, 79)
    s["conv_f32_to_f16"] = conv(0, 0, 77)
    s["conv_f32_to_f16_flush"] = conv(6, 0, 33)
    s["conv_f16_to_f32_flush"] = conv(7, 0, 21)
    s["conv_err_null"] = conv(1, 0xFF, 5)
    s["conv_err_overlap"] = conv(0, 0xE1, 9)
    s["conv_ok_touching"] = conv(1, 0xE0, 8)
    s["conv_err_size"] = conv(0xF9, 0, 0, bytes([0]))
    # Unsupported pairs (pair >= 0xe0: src pair % 4, dst (pair >> 2) % 4), even with n 0.
    s["conv_f16_to_f32_by_pair"] = conv(0, 0, 9, pair=0xE1)
    s["conv_err_f32_to_s8"] = conv(0, 0, 9, pair=0xE8)
    s["conv_err_same_dtype"] = conv(0, 0, 9, pair=0xE5)
    s["conv_err_no_dtype_n0"] = conv(0, 0, 0, pair=0xEF)
    s["conv_f32_to_f16_edges"] = conv(8, 0, 79)
    # bf16 (pair 1), and pairs with bf16 (0xf_: dtypes f32, f16, s8, bf16).
    s["conv_bf16_to_f32"] = conv(1, 0, 79, pair=1)
    s["conv_f32_to_bf16"] = conv(0, 0, 77, pair=1)
    s["conv_f32_to_bf16_edges"] = conv(8, 0, 79, pair=1)
    s["conv_f32_to_bf16_edges_flush"] = conv(14, 0, 61, pair=1)
    s["conv_bf16_to_f32_edges"] = conv(9, 0, 79, pair=1)
    s["conv_f16_to_f32_edges"] = conv(9, 0, 79)
    s["conv_bf16_to_f32_flush"] = conv(7, 0, 21, pair=1)
    s["conv_bf16_err_null"] = conv(1, 0xFE, 5, pair=1)
    s["conv_bf16_err_overlap"] = conv(0, 0xE1, 9, pair=1)
    s["conv_bf16_ok_touching"] = conv(1, 0xE0, 8, pair=1)
    s["conv_bf16_to_f32_by_pair"] = conv(0, 0, 9, pair=0xF3)
    s["conv_f32_to_bf16_by_pair"] = conv(0, 0, 9, pair=0xFC)
    s["conv_err_f16_to_bf16"] = conv(0, 0, 9, pair=0xFD)
    s["conv_err_bf16_to_f16"] = conv(0, 0, 9, pair=0xF7)
    s["conv_err_bf16_to_s8"] = conv(0, 0, 9, pair=0xFB)
    s["conv_err_bf16_same_n0"] = conv(0, 0, 0, pair=0xFF)
    # f16 Q, K and S through attnscore_attention (an attention case, dtypes forced).
    out16 = lambda **k: attn(call=F16_OUT, **k)
    s["f16out_ok"] = out16(hq=1, hkv=1, n_q=3, n_k=5, d=7)
    s["f16out_ok_gqa_softmax"] = out16(hq=4, hkv=2, n_q=7, n_k=39, d=19, flags=1)
    s["f16out_err_overlap"] = out16(hq=2, hkv=1, n_q=3, n_k=3, d=4, place=0xF1)
    s["f16out_err_null_s"] = out16(hq=2, hkv=1, n_q=3, n_k=3, d=4, nul=0xFC)
    s["f16out_ok_f16_accumulation"] = out16(hq=2, hkv=1, n_q=9, n_k=39, d=32, flags=0x70)
    s["f16out_ok_f16_accumulation_cache"] = out16(hq=2, hkv=1, n_q=9, n_k=39, d=32, flags=0x70,
                                                  ksrc=3)
    s["f16out_err_bad_flags"] = out16(hq=1, hkv=1, n_q=3, n_k=3, d=4, flags=0xF9)
    # Quantize (which 0) and fold (which 1): n, d, strides, mode, nulls, place, exponent.
    qz = lambda which, n, dd, strides=(TIGHT, TIGHT), mode=INTS, nul=0, place=0, e=0, flush=False: (
        bytes([QUANTIZE]) + CAP_BEST + bytes([which]) + n + dd + b"".join(strides) +
        bytes([mode, nul, place, exp_byte(e), 3 if flush else 0]))
    s["quant_ok"] = qz(0, r(5), d(33), mode=MANTISSAS)
    s["quant_ok_padded_tiny"] = qz(0, r(7), d(9), strides=(PAD3, PAD1), mode=SCALED, e=-120)
    s["quant_ok_flush"] = qz(0, r(3), d(17), mode=SCALED, e=-125, flush=True)
    s["quant_err_not_finite"] = qz(0, r(4), d(8), mode=SPECIALS)
    s["quant_err_overlap_out_in_x"] = qz(0, r(2), d(8), place=0x01)
    s["quant_err_overlap_scales_in_x"] = qz(0, r(2), d(8), place=0x02)
    s["quant_err_null_scales"] = qz(0, r(2), d(8), nul=0xFD)
    s["quant_f16_ok"] = qz(2, r(5), d(33), mode=3)
    s["quant_f16_ok_padded_subnormals"] = qz(2, r(7), d(9), strides=(PAD3, PAD1), mode=1, e=-20)
    s["quant_f16_err_not_finite"] = qz(2, r(4), d(8), mode=2)
    s["quant_err_s8_src"] = qz(0xF0, r(4), d(8))
    s["quant_err_no_dtype_n0"] = qz(0xF4, r(0), d(8))
    s["quant_f16_err_bad_ldx"] = qz(2, r(4), d(8), strides=(SHORT, TIGHT))
    # bf16 rows (which 6; value modes as f16's, scaled over f32's exponent range).
    s["quant_bf16_ok"] = qz(6, r(5), d(33), mode=3)
    s["quant_bf16_ok_padded_subnormals"] = qz(6, r(7), d(9), strides=(PAD3, PAD1), mode=1,
                                              e=-130)
    s["quant_bf16_ok_flush"] = qz(6, r(3), d(17), mode=1, e=-128, flush=True)
    s["quant_bf16_ok_huge"] = qz(6, r(4), d(12), mode=1, e=120)
    s["quant_bf16_err_not_finite"] = qz(6, r(4), d(8), mode=2)
    s["quant_bf16_err_bad_ldx"] = qz(6, r(4), d(8), strides=(SHORT, TIGHT))
    s["fold_ok"] = qz(1, r(6), d(20), mode=MANTISSAS)
    s["fold_ok_in_place"] = qz(1, r(3), d(8), place=0x03)
    s["fold_err_in_place_other_ld"] = qz(1, r(3), d(8), place=0x03, nul=0xFC)
    s["fold_err_bad_ldo"] = qz(1, r(3), d(8), strides=(TIGHT, SHORT))
    # Parallel calls: pmode's high nibble the task order, low nibble 15 NULL parallel_for, 14
    # the case's own choice; threads; then an attention case of any dtype, S and K source.
    par = lambda order, threads, pm=0, **k: attn(call=PARALLEL,
                                                 head=bytes([order << 4 | pm, threads]), **k)
    for dt, name in [(0, "f32"), (1, "f16"), (2, "s8"), (4, "f32_s16"), (6, "s8_s16"),
                     (8, "bf16"), (12, "bf16_s16")]:
        for ksrc, kname in [(0, ""), (3, "_cache")]:
            s["par_%s%s_two" % (name, kname)] = par(1, 2, hq=4, hkv=2, n_q=9, n_k=35, d=17,
                                                   dt=dt, ksrc=ksrc)
            s["par_%s%s_many" % (name, kname)] = par(3, 8, hq=8, hkv=2, n_q=19, n_k=39, d=8,
                                                    mask=1, flags=1, p0=bytes([30]), dt=dt,
                                                    ksrc=ksrc)
            s["par_%s%s_null_hook" % (name, kname)] = par(0, 2, pm=15, hq=2, hkv=1, n_q=3,
                                                         n_k=5, d=4, dt=dt, ksrc=ksrc)
    s["par_f32_null_par"] = par(2, 3, pm=14, hq=2, hkv=1, n_q=4, n_k=30, d=8)
    s["par_err_before_hook"] = par(1, 2, hq=2, hkv=1, n_q=4, n_k=30, d=8, scale=SC_NAN)

def seeds():
    s = {}
    r, d = rows, dim
    # Successful calls: tile edges, tails of d, chunks of d, strides, misaligned starts.
    s["ok_small_ints"] = scores(C, r(3), r(5), d(7))
    s["ok_cpp_small_ints"] = scores(CPP, r(3), r(5), d(7))
    s["ok_tile_edges"] = scores(C, r(17), rows(65, 69), d(17), ldq=PAD3, ldk=PAD7, lds=PAD1,
                                block=(3, 7, 5, 11))
    s["ok_one_row_huge_ld"] = scores(C, r(1), r(9), d(33), ldq=stride_huge(0))
    s["ok_one_key_huge_ld"] = scores(C, r(6), r(1), d(16), ldk=stride_huge(2))
    s["ok_long_d"] = scores(C, r(2), r(3), d(300), q_mode=MANTISSAS, k_mode=MANTISSAS)
    s["ok_longer_d"] = scores(CPP, r(1), r(2), d(1030), q_mode=MANTISSAS, k_mode=INTS)
    s["ok_misaligned"] = scores(C, r(5), r(7), d(9), leads=0x9AB, ldq=PAD1, lds=PAD17)
    s["ok_s_touches_q_after"] = scores(C, r(4), r(4), d(8), lay=layout("q", S_AFTER))
    s["ok_s_touches_k_before"] = scores(C, r(4), r(4), d(8), lay=layout("k", S_BEFORE))
    s["ok_q_is_k"] = scores(C, r(6), r(6), d(12), lay=layout(k_with_q=True, k_snap=0))
    s["ok_q_k_overlap"] = scores(CPP, r(5), r(3), d(10), lay=layout(k_with_q=True, k_snap=3))
    # Values and scales: specials, raw bits, overflow and underflow, every scale class.
    s["val_specials"] = scores(C, r(5), r(9), d(6), q_mode=SPECIALS, k_mode=INTS)
    s["val_raw"] = scores(C, r(7), r(4), d(19), q_mode=RAW, k_mode=RAW)
    s["val_huge_ints"] = scores(C, r(3), r(8), d(24), q_mode=SCALED, k_mode=SCALED, q_exp=60,
                                k_exp=66)
    s["val_tiny_ints"] = scores(C, r(3), r(8), d(24), q_mode=SCALED, k_mode=SCALED, q_exp=-70,
                                k_exp=-75)
    # Subnormal inputs: with a large partner (a flushing target loses a product far above the
    # contract's underflow term), and times infinity (flushed, Inf * 0 would give NaN).
    s["val_subnormal_times_large"] = scores(C, r(3), r(4), d(6), q_mode=SCALED, k_mode=SCALED,
                                            q_exp=-140, k_exp=100)
    s["val_inf_times_subnormal"] = scores(C, r(4), r(4), d(3), q_mode=SPECIALS, k_mode=SCALED,
                                          k_exp=-140)
    # The same, and more, with subnormals flushed (FTZ|DAZ on x86, FZ on aarch64).
    s["fp_flush_subnormal_times_large"] = scores(C, r(3), r(4), d(6), q_mode=SCALED,
                                                 k_mode=SCALED, q_exp=-140, k_exp=100, flush=True)
    s["fp_flush_inf_times_subnormal"] = scores(C, r(4), r(4), d(3), q_mode=SPECIALS, k_mode=SCALED,
                                               k_exp=-140, flush=True)
    s["fp_flush_ints"] = scores(CPP, r(9), rows(33, 69), d(37), flush=True)
    s["fp_flush_raw"] = scores(C, r(6), r(17), d(21), q_mode=RAW, k_mode=MIXED, flush=True)
    s["fp_flush_scale_denorm"] = scores(C, r(2), r(2), d(4), scale=SC_DENORM, flush=True)
    s["val_mixed"] = scores(CPP, r(9), r(13), d(31), q_mode=MIXED, k_mode=MIXED, q_exp=-20)
    s["scale_neg_zero"] = scores(C, r(2), r(2), d(64), scale=SC_NEG0)
    s["scale_max"] = scores(C, r(2), r(3), d(5), scale=SC_MAX)
    s["scale_minus_one"] = scores(CPP, r(3), r(3), d(4), scale=SC_MINUS1, q_mode=SPECIALS)
    s["scale_raw"] = scores(C, r(4), r(5), d(11), scale=scale_bits(-0.3))
    # Every error status, with nothing written.
    s["err_zero_dim"] = scores(C, r(3), r(3), d(0))
    s["err_zero_dim_null"] = scores(C, r(3), r(3), d(0), nul=nulls(q=True, s=True))
    s["err_null_q"] = scores(C, r(3), r(3), d(4), nul=nulls(q=True))
    s["err_null_k"] = scores(CPP, r(3), r(3), d(4), nul=nulls(k=True))
    s["err_null_s"] = scores(C, r(3), r(3), d(4), nul=nulls(s=True))
    s["err_bad_ldq"] = scores(C, r(3), r(3), d(4), ldq=SHORT)
    s["err_bad_ldk"] = scores(C, r(3), r(3), d(4), ldk=ZERO)
    s["err_bad_lds"] = scores(CPP, r(3), r(3), d(4), lds=SHORT)
    s["err_scale_nan"] = scores(C, r(2), r(2), d(2), scale=SC_NAN)
    s["err_scale_inf"] = scores(C, r(2), r(2), d(2), scale=SC_INF)
    s["err_scale_ninf"] = scores(CPP, r(2), r(2), d(2), scale=SC_NINF)
    s["err_scale_denorm"] = scores(C, r(2), r(3), d(5), scale=SC_DENORM_MIN, q_mode=SCALED,
                                   k_mode=SCALED, q_exp=20, k_exp=20)
    s["err_scale_denorm_cpp"] = scores(CPP, r(2), r(3), d(5), scale=SC_DENORM)
    s["err_overflow_rows_ld"] = scores(C, r(3), r(2), d(4), ldq=stride_huge(2))
    s["err_overflow_bytes"] = scores(C, r(1), r(2), huge(5), ldq=stride_huge(5),
                                     ldk=stride_huge(5))
    s["err_overflow_s"] = scores(C, r(2), r(3), d(4), lds=stride_huge(4))
    s["err_wrap_k"] = scores(C, r(2), r(3), d(4), ldk=stride_wrap(2))
    s["err_wrap_s"] = scores(C, r(3), r(3), d(4), lds=stride_wrap(2))
    s["err_overlap_s_to_the_top"] = scores(C, r(3), r(3), d(4), lds=stride_wrap(1),
                                           lay=layout("q", S_BEFORE))
    s["err_overlap_s_on_q"] = scores(C, r(4), r(4), d(8), lay=layout("q", S_ON_LAST))
    s["err_overlap_s_is_k"] = scores(CPP, r(4), r(4), d(8), lay=layout("k", S_SAME))
    s["err_overlap_s_in_q_gap"] = scores(C, r(4), r(2), d(3), ldq=PAD17,
                                         lay=layout("q", S_INSIDE), r_s=5)
    s["noop_n_q_zero_nulls"] = scores(C, r(0), r(5), d(4), nul=nulls(True, True, True),
                                      scale=SC_NAN)
    s["noop_n_k_zero"] = scores(CPP, r(7), r(0), huge(0), ldq=ZERO)
    s["noop_huge_rows"] = scores(C, huge(0), r(0), d(3))
    # The C++ wrapper: each view dimension disagreeing (SHAPE_MISMATCH before anything else).
    for i, name in enumerate(["q_cols", "k_cols", "s_rows", "s_cols"]):
        s["cpp_mismatch_" + name] = scores(CPP, r(3), r(4), d(5), mis=0xC0 | i | (i % 2) << 2)
    s["cpp_mismatch_empty"] = scores(CPP, r(0), r(4), d(5), mis=0xC0 | 2 | 8, nul=nulls(q=True))
    # Level caps: every family level, another family's, any value.
    for i in range(5):
        s["cap_family_%d" % i] = scores(C, r(9), r(17), d(20), cap=cap_family(i))
    s["cap_foreign"] = scores(C, r(2), r(2), d(3), cap=CAP_FOREIGN)
    s["cap_raw"] = scores(CPP, r(2), r(2), d(3), cap=cap_raw(200))
    # The other calls: level names (known, unknown, NULL), raw levels, statuses, default scale.
    s["names_known"] = bytes([QUERIES, 0, 0, 2, 3, 7, 0, 0x40, 0x2C, 0x01])
    s["names_unknown"] = bytes([QUERIES, 0, 1, 5]) + b"avx51" + bytes([200, 15, 0, 0x90, 7])
    s["names_null"] = bytes([QUERIES, 0, 0xFF, 18, 12, 0, 0x90, 0])
    s["names_bf16_kernel"] = bytes([QUERIES, 0, 0, 2, 3, 3, 0, 0x40, 0x2C, 0x01])
    # f16 (binary16 bits; value modes 0 small ints, 1 scaled ints, 2 specials, 3 any bits).
    s["f16_ok_small_ints"] = scores(F16C, r(3), r(5), d(7))
    s["f16_ok_cpp_tile_edges"] = scores(F16CPP, r(17), rows(65, 69), d(17), ldq=PAD3, ldk=PAD7,
                                        lds=PAD1, block=(3, 7, 5, 11))
    s["f16_ok_decode_long_d"] = scores(F16C, r(1), rows(40, 69), d(300), q_mode=1, k_mode=1,
                                       q_exp=30, k_exp=10)
    s["f16_val_specials"] = scores(F16C, r(5), r(9), d(6), q_mode=2, k_mode=0)
    s["f16_val_raw"] = scores(F16C, r(7), r(4), d(19), q_mode=3, k_mode=3)
    s["f16_val_max_sum"] = scores(F16CPP, r(2), r(3), d(40), q_mode=1, k_mode=1, q_exp=36,
                                  k_exp=25)
    s["f16_fp_flush_subnormals"] = scores(F16C, r(3), r(4), d(6), q_mode=1, k_mode=1, q_exp=0,
                                          k_exp=0, flush=True)
    s["f16_err_null_q"] = scores(F16C, r(3), r(3), d(4), nul=nulls(q=True))
    s["f16_err_overlap"] = scores(F16C, r(4), r(4), d(8), lay=layout("q", S_ON_LAST))
    s["f16_err_cpp_mismatch"] = scores(F16CPP, r(3), r(4), d(5), mis=0xC0 | 1)
    s["f16_err_scale_nan"] = scores(F16C, r(2), r(2), d(2), scale=SC_NAN)
    # bf16 (its bits; value modes as f16's, scaled ints over f32's exponent range); each result
    # also the f32 call's bits on the converted values.
    s["bf16_ok_small_ints"] = scores(BF16C, r(3), r(5), d(7))
    s["bf16_ok_tile_edges"] = scores(BF16C, r(17), rows(65, 69), d(17), ldq=PAD3, ldk=PAD7,
                                     lds=PAD1, block=(3, 7, 5, 11))
    s["bf16_ok_decode_long_d"] = scores(BF16C, r(1), rows(40, 69), d(300), q_mode=3, k_mode=3)
    s["bf16_ok_longer_d"] = scores(BF16C, r(1), r(2), d(1030), q_mode=3, k_mode=0)
    s["bf16_ok_misaligned"] = scores(BF16C, r(5), r(7), d(9), leads=0x9AB, ldq=PAD1, lds=PAD17)
    s["bf16_ok_q_is_k"] = scores(BF16C, r(6), r(6), d(12), lay=layout(k_with_q=True, k_snap=0))
    s["bf16_val_specials"] = scores(BF16C, r(5), r(9), d(6), q_mode=2, k_mode=0)
    s["bf16_val_raw"] = scores(BF16C, r(7), r(4), d(19), q_mode=3, k_mode=3)
    s["bf16_val_mixed"] = scores(BF16C, r(9), r(13), d(31), q_mode=4, k_mode=4)
    s["bf16_val_huge_ints"] = scores(BF16C, r(3), r(8), d(24), q_mode=1, k_mode=1, q_exp=60,
                                     k_exp=66)
    s["bf16_val_tiny_ints"] = scores(BF16C, r(3), r(8), d(24), q_mode=1, k_mode=1, q_exp=-70,
                                     k_exp=-75)
    s["bf16_val_subnormal_times_large"] = scores(BF16C, r(3), r(4), d(6), q_mode=1, k_mode=1,
                                                 q_exp=-130, k_exp=100)
    s["bf16_fp_flush_subnormals"] = scores(BF16C, r(3), r(4), d(6), q_mode=1, k_mode=1,
                                           q_exp=-130, k_exp=100, flush=True)
    s["bf16_fp_flush_raw"] = scores(BF16C, r(6), r(17), d(21), q_mode=3, k_mode=4, flush=True)
    s["bf16_scale_raw"] = scores(BF16C, r(4), r(5), d(11), scale=scale_bits(-0.3), q_mode=3,
                                 k_mode=3)
    for i in range(5):
        s["bf16_cap_family_%d" % i] = scores(BF16C, r(9), r(17), d(20), cap=cap_family(i),
                                             q_mode=3, k_mode=3)
    s["bf16_err_zero_dim"] = scores(BF16C, r(3), r(3), d(0))
    s["bf16_err_null_q"] = scores(BF16C, r(3), r(3), d(4), nul=nulls(q=True))
    s["bf16_err_bad_ldk"] = scores(BF16C, r(3), r(3), d(4), ldk=ZERO)
    s["bf16_err_overlap"] = scores(BF16C, r(4), r(4), d(8), lay=layout("q", S_ON_LAST))
    s["bf16_err_overflow_bytes"] = scores(BF16C, r(1), r(2), huge(5), ldq=stride_huge(5),
                                          ldk=stride_huge(5))
    s["bf16_err_wrap_k"] = scores(BF16C, r(2), r(3), d(4), ldk=stride_wrap(2))
    s["bf16_err_scale_nan"] = scores(BF16C, r(2), r(2), d(2), scale=SC_NAN)
    s["bf16_noop_n_q_zero_nulls"] = scores(BF16C, r(0), r(5), d(4), nul=nulls(True, True, True),
                                           scale=SC_NAN)
    attention_seeds(s)
    output_seeds(s)
    s8_seeds(s)
    # The cache of each dtype: decode and prefill, multi-head, token-major appends, truncate,
    # every init, append and scores status.
    kb = key_block
    for call, name in [(KCACHE, "kc"), (KCACHE_F16, "kc16"), (KCACHE_S8, "kc8"),
                       (KCACHE_BF16, "kcbf16")]:
        kc = lambda *a, **k: kcache(*a, call=call, **k)
        s[name + "_decode"] = kc(d(8), 20, (kb(5), kb(7)))
        s[name + "_multihead_gqa"] = kc(d(16), 30, (kb(9), kb(1)), heads=4, g=3, n_q=4,
                                        smode=0x48)
        s[name + "_token_major"] = kc(d(12), 30, (kb(7, token_major=True), kb(3, pad=2)),
                                      heads=3, n_q=2)
        s[name + "_prefill_tails"] = kc(d(33), 40, (kb(13, pad=1), kb(1), kb(20, pad=2)), n_q=8,
                                        heads=2)
        s[name + "_long_d"] = kc(d(600), 6, (kb(6),), n_q=2)
        s[name + "_big_capacity"] = kc(d(64), 1, (kb(33), kb(40)), big_capacity=500, n_q=4)
        s[name + "_misaligned_mem"] = kc(d(17), 9, (kb(9),), mem=2 | 5 << 2, offset=3, n_q=3)
        for i in range(5):
            s[name + "_cap_family_%d" % i] = kc(d(20), 30, (kb(17), kb(13)), cap=cap_family(i),
                                                n_q=7, heads=2)
        s[name + "_k_inside_cache"] = kc(d(4), 40, (kb(2), kb(3, inside=0), kb(3, inside=900)),
                                         n_q=2)
        s[name + "_s_inside_cache"] = kc(d(4), 40, (kb(7),), n_q=2, s_inside=0)
        s[name + "_s_inside_cache_tail"] = kc(d(4), 60, (kb(3),), n_q=1, s_inside=1100)
        s[name + "_truncate"] = kc(d(8), 20, (kb(5), kb(7)), truncate=0xC0 + 7, heads=2, n_q=3)
        s[name + "_truncate_empty"] = kc(d(8), 20, (kb(5),), truncate=0xC0 + 6, heads=2)
        s[name + "_err_truncate_past"] = kc(d(8), 20, (kb(5),), truncate=0xF9, heads=2)
        s[name + "_err_scores_past_size"] = kc(d(8), 20, (kb(5),), smode=5, n_q=2)
        s[name + "_scores_fewer_keys"] = kc(d(8), 20, (kb(5),), smode=4 | 0x40, n_q=2)
        s[name + "_err_bad_kind"] = kc(d(8), 10, (kb(3),), shape=0xF1)
        s[name + "_err_bad_dtype"] = kc(d(8), 10, (kb(3),), shape=0xF0)
        s[name + "_err_zero_heads"] = kc(d(8), 10, (kb(3),), shape=0x70)
        s[name + "_err_zero_dim"] = kc(d(0), 5, (kb(3),))
        s[name + "_err_zero_capacity"] = kc(d(5), 0, (kb(3),))
        s[name + "_err_capacity_overflow"] = kc(d(4), huge(0), (kb(2),))
        s[name + "_err_mem_short"] = kc(d(8), 10, (kb(3),), mem=1)
        s[name + "_err_mem_tiny"] = kc(d(8), 10, (kb(3),), mem=3 | 9 << 2)
        s[name + "_err_null_mem"] = kc(d(8), 10, (kb(3),), null_mem=True)
        s[name + "_err_null_out"] = kc(d(8), 10, (kb(3),), null_out=True)
        s[name + "_err_full"] = kc(d(6), 5, (kb(3), kb(3), kb(2)), n_q=2)
        s[name + "_err_bad_ldk"] = kc(d(6), 5, (kb(3, ldk=SHORT), kb(2)))
        s[name + "_err_ldk_overflow"] = kc(d(6), 5, (kb(3, ldk=stride_huge(0)),))
        s[name + "_err_null_k"] = kc(d(6), 5, (kb(3, null=True), kb(2)))
        s[name + "_err_null_tensor"] = kc(d(6), 5, (kb(3, kmode=0xFF), kb(2)))
        s[name + "_err_dtype_mismatch"] = kc(d(6), 5, (kb(3, kmode=0xFC), kb(2)))
        s[name + "_err_foreign_zeros"] = kc(d(8), 10, (kb(3),), handle=1)
        s[name + "_err_foreign_ones"] = kc(d(8), 10, (kb(3),), handle=2)
        s[name + "_err_shifted"] = kc(d(8), 10, (kb(3),), handle=28)
        s[name + "_err_null_cache"] = kc(d(8), 10, (kb(3),), handle=3)
        s[name + "_err_scale_nan"] = kc(d(8), 10, (kb(3),), scale=SC_NAN)
        # K on the header alone: a cache that took it would change its own keys (the size).
        s[name + "_err_k_on_header"] = kc(d(4), 40, (kb(2), kb(16, inside=0)), n_q=1)
    s["kc8_err_null_key_scales"] = kcache(d(8), 10, (kb(3, kmode=0xFD),), call=KCACHE_S8)
    s["kc8_err_bad_key_scales"] = kcache(d(8), 10, (kb(9, kmode=0x60),), call=KCACHE_S8)
    s["kc8_err_scale_count"] = kcache(d(8), 10, (kb(4, kmode=0x18),), call=KCACHE_S8)
    s["kc8_err_dim_too_large"] = kcache(huge(12), 2, (kb(1),), call=KCACHE_S8)
    return s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(seeds().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
