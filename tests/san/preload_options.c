/* preload_options.c: the sanitizer runtimes' defaults for the preload library built with SAN=1 (mk/san.mk), linked into that .so only. */

/*
 * The sanitized library goes into programs that are not sanitized: its ASan runtime is
 * its dependency and comes after libc in the lookup order, where ASan would refuse to
 * start. It checks the library's own code (stack, globals, TLS; UBSan all of it) but
 * not the heap or libc's string functions, which stay glibc's. The fatal signals stay
 * the program's and the library's (the crash suites compare deaths), and there is no
 * leak check at exit (no heap of ASan's to check). The runtimes read these functions
 * from the first object that defines them: the preloaded library. An ASAN_OPTIONS the
 * test sets still comes after them and wins.
 */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "verify_asan_link_order=0:detect_leaks=0:handle_segv=0:handle_sigbus=0:"
           "handle_sigfpe=0:handle_sigill=0:handle_abort=0:allow_user_segv_handler=1:"
           "abort_on_error=0:exitcode=86";
}

__attribute__((visibility("default"))) const char *__ubsan_default_options(void)
{
    return "print_stacktrace=1:halt_on_error=1:exitcode=86";
}
