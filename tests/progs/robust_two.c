/* robust_two.c: two plugins, each linked to its own copy of the runtime, both loaded RTLD_LOCAL: each plugin's cudaMalloc must reach its own copy. Usage: robust_two PLUGIN_A PLUGIN_B */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    setvbuf(stdout, NULL, _IONBF, 0);
    void *a = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    void *b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!a || !b)
        return 2;
    int (*fa)(void) = (int (*)(void))dlsym(a, "user_alloc");
    int (*fb)(void) = (int (*)(void))dlsym(b, "user_alloc");
    printf("a: ");
    fa();
    printf("b: ");
    fb();
    printf("a: ");
    fa();
    return 0;
}
