/* elfsym.c: finds a function in the main program's own symbol table (.symtab), which the dynamic linker does not see. */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gmt.h"
#include "elfsym.h"

#if __SIZEOF_POINTER__ == 8
#define NATIVE_CLASS ELFCLASS64
#define SYM_TYPE(info) ELF64_ST_TYPE(info)
#else
#define NATIVE_CLASS ELFCLASS32
#define SYM_TYPE(info) ELF32_ST_TYPE(info)
#endif

/*
 * A program built with plain nvcc links the CUDA runtime statically: its functions are
 * in the executable's .symtab (unless it was stripped), never in the dynamic symbol
 * table, so dlsym can't find them. This reads the executable's file (mapped read-only,
 * every offset checked against its size) and returns the address of a defined function
 * of that name, relocated by the program's load bias, only when the address lies in an
 * executable segment of the loaded program. NULL otherwise. No malloc.
 */

struct main_prog {
    ElfW(Addr) bias;
    const ElfW(Phdr) *phdr;
    ElfW(Half) phnum;
    bool found;
};

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct main_prog *m = data;
    m->bias = info->dlpi_addr;
    m->phdr = info->dlpi_phdr;
    m->phnum = info->dlpi_phnum;
    m->found = true;
    return 1; /* the first object is the main program */
}

static bool in_exec_segment(const struct main_prog *m, uintptr_t addr)
{
    for (ElfW(Half) i = 0; i < m->phnum; i++) {
        const ElfW(Phdr) *ph = &m->phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = m->bias + ph->p_vaddr;
        if (addr >= lo && addr - lo < ph->p_memsz)
            return true;
    }
    return false;
}

/* The value of the defined function `name` in the ELF image at img (len bytes), 0 none. */
static ElfW(Addr) find_in_image(const unsigned char *img, size_t len, const char *name)
{
    if (len < sizeof(ElfW(Ehdr)))
        return 0;
    const ElfW(Ehdr) *eh = (const void *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != NATIVE_CLASS ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > len ||
        (len - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
        return 0;
    const ElfW(Shdr) *sh = (const void *)(img + eh->e_shoff);
    size_t name_len = strlen(name) + 1;
    for (ElfW(Half) i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_entsize != sizeof(ElfW(Sym)) ||
            sh[i].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Shdr) *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > len || len - sh[i].sh_offset < sh[i].sh_size ||
            st->sh_offset > len || len - st->sh_offset < st->sh_size)
            continue;
        const ElfW(Sym) *sym = (const void *)(img + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof *sym;
        const char *strs = (const char *)(img + st->sh_offset);
        for (size_t k = 0; k < n; k++) {
            if (SYM_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_shndx == SHN_UNDEF ||
                !sym[k].st_value || sym[k].st_name >= st->sh_size ||
                st->sh_size - sym[k].st_name < name_len)
                continue;
            if (!memcmp(strs + sym[k].st_name, name, name_len))
                return sym[k].st_value;
        }
    }
    return 0;
}

void *gmt_main_program_function(const char *name)
{
    struct main_prog m = { 0 };
    dl_iterate_phdr(first_object, &m);
    if (!m.found)
        return NULL;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    void *img = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0)
        img = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (img == MAP_FAILED)
        return NULL;
    ElfW(Addr) v = find_in_image(img, (size_t)sb.st_size, name);
    munmap(img, (size_t)sb.st_size);
    if (!v)
        return NULL;
    uintptr_t addr = m.bias + v;
    return in_exec_segment(&m, addr) ? (void *)addr : NULL;
}
