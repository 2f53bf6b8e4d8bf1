/* test_torch.c: PyTorch's caching allocator seen from inside, on the simulated libc10.so and libc10_cuda.so: blocks recorded with their stacks, the profiler still fed, and summary's allocated, reserved, leaks, steps and OOMs. */
#include "shell_test.h"

TestSuite(torch, .init = shell_setup, .fini = shell_teardown, .timeout = 120);

#define PROG "$B/fakes/progs/fake_torch"
#define CHECK "python3 '" TORCH_SRC "/tests/python/torch_check.py'"

/* Runs the scenario under `gpumemtrace run` (environment `env` before it), its output in
 * prog.out and the summary's JSON in s.json; returns what torch_check.py says. */
static int scenario(const char *env, const char *name, const char *args)
{
    cr_assert_eq(sh("rm -rf t; %s $G run -q -o t -- " PROG " %s %s > prog.out", env, name, args), 0,
                 "%s: the program failed", name);
    cr_assert_eq(sh("$G summary --json t > s.json"), 0);
    int rc = sh(CHECK " %s prog.out s.json", name);
    char out[8192];
    slurp("out", out, sizeof out);
    cr_expect_eq(rc, 0, "%s: the summary differs from what the allocator did:\n%s", name, out);
    return rc;
}

static void need_nvtx(void)
{
    if (system("python3 -c 'import nvtx' >/dev/null 2>&1") != 0)
        cr_skip_test("python3 with the nvtx package is not installed (pip install nvtx)");
}

/* The loop: 40 train_step ranges, 3 MiB kept per step in keep_for_later, with the
 * cache on. The segments grow by 20 MiB every few steps; the blocks by 3 MiB each step. */
Test(torch, a_leak_under_the_cache_is_named_by_its_line)
{
    need_nvtx();
    cr_assert_eq(sh("FAKES_DIR=\"$B/fakes\" $G run -q -o t -- python3 '" TORCH_SRC
                    "/tests/python/torch_leak.py' 40 > prog.out"), 0);
    cr_assert_eq(sh("$G summary --json t > s.json"), 0);
    int rc = sh(CHECK " leak prog.out s.json");
    char out[8192];
    slurp("out", out, sizeof out);
    cr_expect_eq(rc, 0, "%s", out);
    cr_assert_eq(sh("$G summary t"), 0);
    static char text[65536];
    slurp("out", text, sizeof text);
    char want[256], prog[256];
    slurp("prog.out", prog, sizeof prog);
    int line = 0;
    cr_assert_eq(sscanf(prog, "keep_line=%d", &line), 1, "%s", prog);
    snprintf(want, sizeof want, "grows every step: +3 MiB per step over 39 steps, from "
             "keep_for_later (torch_leak.py:%d)", line);
    cr_expect(strstr(text, want), "no '%s' in:\n%s", want, text);
    cr_expect(strstr(text, "PyTorch blocks still allocated at the end"), "%s", text);
}

Test(torch, counts_and_totals_are_the_allocators)
{
    scenario("", "steps", "5");
}

Test(torch, the_profiler_still_gets_every_report)
{
    /* without the tracer: what libc10's own function receives */
    cr_assert_eq(sh(PROG " steps 3"), 0);
    char plain[512], traced[512];
    slurp("out", plain, sizeof plain);
    cr_assert_eq(sh("$G run -q -o t -- " PROG " steps 3"), 0);
    slurp("out", traced, sizeof traced);
    cr_expect_str_eq(traced, plain, "the allocator or its profiler saw something else traced");
    cr_expect(strstr(traced, "profiler=30 cuda=30"), "%s", traced);
    cr_assert_eq(sh("rm -rf t; FAKECUDA_MEM_MB=400 $G run -q -o t -- " PROG " oom"), 0);
    slurp("out", traced, sizeof traced);
    cr_expect(strstr(traced, "ooms=1"), "the OOM report reaches libc10's: %s", traced);
}

Test(torch, a_fragmentation_oom_is_the_request_against_the_largest_free_block)
{
    scenario("FAKECUDA_MEM_MB=400", "oom", "");
    cr_assert_eq(sh("$G summary t"), 0);
    static char text[65536];
    slurp("out", text, sizeof text);
    cr_expect(strstr(text, "asked 10 MiB; the largest free block 8 MiB"), "%s", text);
}

/* An autograd-like worker: its blocks are in its own chunks, with its own stack. */
Test(torch, a_worker_threads_blocks_carry_its_stack)
{
    scenario("", "thread", "");
    cr_assert_eq(sh("$G dump t/*.gmt | awk '$4 == \"BLOCK\" {print $2}' | sort -u | wc -l"), 0);
    char out[64];
    slurp("out", out, sizeof out);
    cr_expect_eq(atoi(out), 2, "blocks from %s thread(s), not 2", out);
    cr_assert_eq(sh("$G dump t/*.gmt | grep -c 'THREAD.*name=\\\"pt_autograd_0'"), 0);
}

Test(torch, a_fork_child_traces_its_own_blocks)
{
    cr_assert_eq(sh("$G run -q -o t -- " PROG " fork > prog.out"), 0);
    cr_assert_eq(count_traces("t"), 2);
    cr_assert_eq(sh("set -- t/*.gmt; $G summary --json \"$1\" > a.json && $G summary --json \"$2\" > b.json"), 0);
    int rc = sh(CHECK " fork prog.out a.json b.json");
    char out[4096];
    slurp("out", out, sizeof out);
    cr_expect_eq(rc, 0, "%s", out);
}

Test(torch, cpu_blocks_are_forwarded_and_not_recorded)
{
    scenario("", "cpu", "");
    /* the loader skips other devices' blocks: the file itself must hold the CUDA one alone */
    cr_assert_eq(sh("$G dump t/*.gmt | awk '$4 == \"BLOCK\"' | wc -l"), 0);
    char out[64];
    slurp("out", out, sizeof out);
    cr_expect_eq(atoi(out), 1, "%s BLOCK records, not 1", out);
}

Test(torch, without_events_the_summary_says_why)
{
    cr_assert_eq(sh("rm -rf t; PYTORCH_NO_CUDA_MEMORY_CACHING=1 $G run -q -o t -- " PROG " steps 2"
                    " >/dev/null && $G summary --json t > s.json"), 0);
    cr_expect_eq(sh(CHECK " no-caching /dev/null s.json"), 0);
    cr_assert_eq(sh("rm -rf t; PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync $G run -q -o t -- "
                    PROG " steps 2 >/dev/null && $G summary --json t > s.json"), 0);
    cr_expect_eq(sh(CHECK " cudaMallocAsync /dev/null s.json"), 0);
    cr_assert_eq(sh("$G summary t"), 0);
    static char text[65536];
    slurp("out", text, sizeof text);
    cr_expect(strstr(text, "backend:cudaMallocAsync: PyTorch reports no blocks"), "%s", text);
}

/* The exports: every block a row, its sites a table, allocated and reserved as counters. */
Test(torch, the_exports_carry_the_blocks)
{
    cr_assert_eq(sh("$G run -q -o t -- " PROG " steps 4 > prog.out"), 0);
    cr_assert_eq(sh("$G export --format sqlite -o db t && $G export --format csv -o csv t && "
                    "$G export --format chrome -o c.json t"), 0);
    char prog[512], out[4096];
    slurp("prog.out", prog, sizeof prog);
    unsigned long allocs = 0, frees = 0, allocated = 0, reserved = 0;
    cr_assert_eq(sscanf(prog, "allocs=%lu frees=%lu allocated=%lu reserved=%lu", &allocs, &frees,
                        &allocated, &reserved), 4, "%s", prog);
    cr_assert_eq(sh("python3 -c \"import sqlite3, csv, json\n"
                    "db = sqlite3.connect('db')\n"
                    "print(*db.execute(\\\"select sum(op = 'ALLOC'), sum(op = 'FREE') from blocks\\\").fetchone())\n"
                    "last = db.execute('select allocated_bytes, reserved_bytes from blocks order by time_ns desc limit 1').fetchone()\n"
                    "print(*last)\n"
                    "print(sum(r[0] for r in db.execute('select allocs from block_sites')))\n"
                    "print(len(list(csv.DictReader(open('csv/blocks.csv')))))\n"
                    "ev = json.load(open('c.json'))['traceEvents']\n"
                    "print(sorted(set(e['name'] for e in ev if e.get('ph') == 'C' and 'PyTorch' in e['name'])))\""), 0);
    slurp("out", out, sizeof out);
    char want[1024];
    snprintf(want, sizeof want, "%lu %lu\n%lu %lu\n%lu\n%lu\n"
             "['GPU 0 PyTorch allocated bytes', 'GPU 0 PyTorch reserved bytes']\n",
             allocs, frees, allocated, reserved, allocs, allocs + frees);
    cr_expect_str_eq(out, want);
}

/* The report's chart: PyTorch's allocated and reserved lines of each device, the last
 * points the allocator's own end totals. */
Test(torch, the_report_draws_allocated_and_reserved)
{
    cr_assert_eq(sh("$G run -q -o t -- " PROG " steps 3 > prog.out && $G report t -o r.html"), 0);
    cr_assert_eq(sh("python3 -c \"import json, re\n"
                    "s = open('r.html').read()\n"
                    "d = json.loads(re.findall(r'<script[^>]*>(.*?)</script>', s, re.S)[0])\n"
                    "dev = d['traces'][0]['devices'][0]\n"
                    "print(dev['pytorch_allocated'][-1], dev['pytorch_reserved'][-1])\""), 0);
    char prog[512], out[256], want[256];
    slurp("prog.out", prog, sizeof prog);
    slurp("out", out, sizeof out);
    unsigned long allocated = 0, reserved = 0;
    cr_assert_eq(sscanf(strstr(prog, "allocated="), "allocated=%lu reserved=%lu", &allocated, &reserved), 2);
    snprintf(want, sizeof want, "%lu %lu\n", allocated, reserved);
    cr_expect_str_eq(out, want);
}

/* The report's icicle of PyTorch's blocks: the live blocks at the allocated peak, whose
 * bytes add up to the allocated peak, the kept tensors' stack the largest. */
Test(torch, the_report_draws_the_blocks_at_the_allocated_peak)
{
    need_nvtx();
    cr_assert_eq(sh("FAKES_DIR=\"$B/fakes\" $G run -q -o t -- python3 '" TORCH_SRC
                    "/tests/python/torch_leak.py' 40 > prog.out && $G report t -o r.html && "
                    "$G summary --json t > s.json"), 0);
    cr_assert_eq(sh("python3 -c \"import json, re\n"
                    "s = open('r.html').read()\n"
                    "d = json.loads(re.findall(r'<script[^>]*>(.*?)</script>', s, re.S)[0])\n"
                    "t = d['traces'][0]\n"
                    "dev = t['devices'][0]\n"
                    "fl = dev['block_flame']\n"
                    "top = [t['frames'][i] for i in fl[0]['frames']]\n"
                    "peak = json.load(open('s.json'))['traces'][0]['pytorch']['devices'][0]\n"
                    "print(sum(x['bytes'] for x in fl) + dev['block_flame_rest_bytes'] == peak['allocated_peak_bytes'],"
                    " [f for f in top if f.startswith('keep_for_later')])\""), 0);
    char prog[256], out[512], want[256];
    slurp("prog.out", prog, sizeof prog);
    slurp("out", out, sizeof out);
    int line = 0;
    cr_assert_eq(sscanf(prog, "keep_line=%d", &line), 1, "%s", prog);
    snprintf(want, sizeof want, "True ['keep_for_later (torch_leak.py:%d)']\n", line);
    cr_expect_str_eq(out, want);
}

/* summary --csv's PyTorch tables hold the rows of summary --json's "pytorch": its devices,
 * sites, leaks and OOMs, figure for figure. */
Test(torch, summary_csv_has_the_pytorch_tables_of_the_json)
{
    cr_assert_eq(sh("FAKECUDA_MEM_MB=400 $G run -q -o t -- " PROG " oom > prog.out; $G run -q -o u -- " PROG
                    " steps 4 > prog2.out && $G summary --json t u > s.json && "
                    "$G summary --csv -o tab t u"), 0);
    cr_assert_eq(sh("python3 -c \"import csv, json\n"
                    "def rows(n): return list(csv.DictReader(open('tab/pytorch_%%s.csv' %% n, newline='')))\n"
                    "js = [(t['file'], t['pytorch']) for t in json.load(open('s.json'))['traces'] if 'pytorch' in t]\n"
                    "dev = [(f, d['device'], d['allocs'], d['frees'], d['allocated_peak_bytes'], d['reserved_end_bytes']) for f, p in js for d in p['devices']]\n"
                    "cdev = [(r['file'], int(r['device']), int(r['allocs']), int(r['frees']), int(r['allocated_peak_bytes']), int(r['reserved_end_bytes'])) for r in rows('devices')]\n"
                    "site = [(f, s['live_at_peak_bytes'], s['bytes_total'], s['line']) for f, p in js for s in p['sites']]\n"
                    "csite = [(r['file'], int(r['live_at_peak_bytes']), int(r['bytes_total']), r['line']) for r in rows('sites')]\n"
                    "leak = [(f, s['bytes'], s['blocks'], s['line']) for f, p in js for s in p['leaks']]\n"
                    "cleak = [(r['file'], int(r['bytes']), int(r['blocks']), r['line']) for r in rows('leaks')]\n"
                    "oom = [(f, o['request_bytes'], o['largest_free_bytes'], o['free_unusable_bytes']) for f, p in js for o in p['ooms']]\n"
                    "coom = [(r['file'], int(r['request_bytes']), int(r['largest_free_bytes']), int(r['free_unusable_bytes'])) for r in rows('ooms')]\n"
                    "print(len(js), len(dev), bool(site), bool(leak), len(oom))\n"
                    "print(dev == cdev, site == csite, leak == cleak, oom == coom)\""), 0);
    char out[512];
    slurp("out", out, sizeof out);
    cr_expect_str_eq(out, "2 2 True True 1\nTrue True True True\n");
}
