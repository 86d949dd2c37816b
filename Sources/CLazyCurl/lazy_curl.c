// Trampolines for the libcurl functions FoundationNetworking calls: see include/CLazyCurl.h for why.
//
// The signatures are libcurl's (curl/curl.h, curl/multi.h, curl/urlapi.h); its enums are C ints, its handles opaque
// pointers. Three functions are variadic with exactly one argument after the option, which libcurl documents as a
// long, a pointer, a function pointer or a curl_off_t: on the LP64 ABIs this file is built for (x86_64 and arm64
// Linux) all four travel in one 64-bit general register, so the trampoline forwards it as a 64-bit integer.
#include "CLazyCurl.h"

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int clazycurl_present(void) { return 1; }

typedef int (*global_init_f)(long);
typedef void *(*handle_f)(void);
typedef void (*release_f)(void *);
typedef int (*option_f)(void *, int, ...);
typedef int (*pause_f)(void *, int);
typedef const char *(*strerror_f)(int);
typedef int (*pair_f)(void *, void *);
typedef int (*assign_f)(void *, int, void *);
typedef int (*cleanup_f)(void *);
typedef void *(*info_read_f)(void *, int *);
typedef int (*socket_action_f)(void *, int, int, int *);
typedef void *(*slist_append_f)(void *, const char *);
typedef int (*url_get_f)(const void *, int, char **, unsigned int);
typedef int (*url_set_f)(void *, int, const char *, unsigned int);
typedef char *(*version_f)(void);
typedef void *(*version_info_f)(int);

static struct {
    global_init_f global_init;
    handle_f easy_init;
    release_f easy_cleanup;
    option_f easy_setopt;
    option_f easy_getinfo;
    pause_f easy_pause;
    strerror_f easy_strerror;
    release_f free;
    handle_f multi_init;
    pair_f multi_add_handle;
    pair_f multi_remove_handle;
    assign_f multi_assign;
    cleanup_f multi_cleanup;
    info_read_f multi_info_read;
    option_f multi_setopt;
    socket_action_f multi_socket_action;
    slist_append_f slist_append;
    release_f slist_free_all;
    handle_f url;
    url_get_f url_get;
    url_set_f url_set;
    version_f version;
    version_info_f version_info;
} curl;

static pthread_once_t bound = PTHREAD_ONCE_INIT;

static void *symbol(void *library, const char *name) {
    void *address = dlsym(library, name);
    if (address == NULL) {
        fprintf(stderr, "moodledger: libcurl.so.4 has no %s\n", name);
        abort();
    }
    return address;
}

// Binds every function at once. The library is opened by its own handle, so dlsym finds libcurl's functions, never
// these trampolines (the binary is not in that handle's scope).
static void bind_all(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        // Not reached through the sync client, which opens the library first and reports a missing one.
        fprintf(stderr, "moodledger: cannot open libcurl.so.4: %s\n", dlerror());
        abort();
    }
    curl.global_init = (global_init_f)symbol(library, "curl_global_init");
    curl.easy_init = (handle_f)symbol(library, "curl_easy_init");
    curl.easy_cleanup = (release_f)symbol(library, "curl_easy_cleanup");
    curl.easy_setopt = (option_f)symbol(library, "curl_easy_setopt");
    curl.easy_getinfo = (option_f)symbol(library, "curl_easy_getinfo");
    curl.easy_pause = (pause_f)symbol(library, "curl_easy_pause");
    curl.easy_strerror = (strerror_f)symbol(library, "curl_easy_strerror");
    curl.free = (release_f)symbol(library, "curl_free");
    curl.multi_init = (handle_f)symbol(library, "curl_multi_init");
    curl.multi_add_handle = (pair_f)symbol(library, "curl_multi_add_handle");
    curl.multi_remove_handle = (pair_f)symbol(library, "curl_multi_remove_handle");
    curl.multi_assign = (assign_f)symbol(library, "curl_multi_assign");
    curl.multi_cleanup = (cleanup_f)symbol(library, "curl_multi_cleanup");
    curl.multi_info_read = (info_read_f)symbol(library, "curl_multi_info_read");
    curl.multi_setopt = (option_f)symbol(library, "curl_multi_setopt");
    curl.multi_socket_action = (socket_action_f)symbol(library, "curl_multi_socket_action");
    curl.slist_append = (slist_append_f)symbol(library, "curl_slist_append");
    curl.slist_free_all = (release_f)symbol(library, "curl_slist_free_all");
    curl.url = (handle_f)symbol(library, "curl_url");
    curl.url_get = (url_get_f)symbol(library, "curl_url_get");
    curl.url_set = (url_set_f)symbol(library, "curl_url_set");
    curl.version = (version_f)symbol(library, "curl_version");
    curl.version_info = (version_info_f)symbol(library, "curl_version_info");
}

#define BIND() pthread_once(&bound, bind_all)

int curl_global_init(long flags) { BIND(); return curl.global_init(flags); }
void *curl_easy_init(void) { BIND(); return curl.easy_init(); }
void curl_easy_cleanup(void *handle) { BIND(); curl.easy_cleanup(handle); }
int curl_easy_pause(void *handle, int mask) { BIND(); return curl.easy_pause(handle, mask); }
const char *curl_easy_strerror(int code) { BIND(); return curl.easy_strerror(code); }
void curl_free(void *pointer) { BIND(); curl.free(pointer); }
void *curl_multi_init(void) { BIND(); return curl.multi_init(); }
int curl_multi_add_handle(void *multi, void *easy) { BIND(); return curl.multi_add_handle(multi, easy); }
int curl_multi_remove_handle(void *multi, void *easy) { BIND(); return curl.multi_remove_handle(multi, easy); }
int curl_multi_assign(void *multi, int socket, void *pointer) {
    BIND();
    return curl.multi_assign(multi, socket, pointer);
}
int curl_multi_cleanup(void *multi) { BIND(); return curl.multi_cleanup(multi); }
void *curl_multi_info_read(void *multi, int *queued) { BIND(); return curl.multi_info_read(multi, queued); }
int curl_multi_socket_action(void *multi, int socket, int events, int *running) {
    BIND();
    return curl.multi_socket_action(multi, socket, events, running);
}
void *curl_slist_append(void *list, const char *text) { BIND(); return curl.slist_append(list, text); }
void curl_slist_free_all(void *list) { BIND(); curl.slist_free_all(list); }
void *curl_url(void) { BIND(); return curl.url(); }
int curl_url_get(const void *url, int part, char **value, unsigned int flags) {
    BIND();
    return curl.url_get(url, part, value, flags);
}
int curl_url_set(void *url, int part, const char *value, unsigned int flags) {
    BIND();
    return curl.url_set(url, part, value, flags);
}
char *curl_version(void) { BIND(); return curl.version(); }
void *curl_version_info(int age) { BIND(); return curl.version_info(age); }

// The one argument after the option, forwarded as it came (see the top of this file).
#define FORWARD_ONE(function, handle, option)                                                                   \
    do {                                                                                                        \
        va_list arguments;                                                                                      \
        va_start(arguments, option);                                                                            \
        uint64_t argument = va_arg(arguments, uint64_t);                                                        \
        va_end(arguments);                                                                                      \
        BIND();                                                                                                 \
        return curl.function(handle, option, argument);                                                         \
    } while (0)

int curl_easy_setopt(void *handle, int option, ...) { FORWARD_ONE(easy_setopt, handle, option); }
int curl_easy_getinfo(void *handle, int info, ...) { FORWARD_ONE(easy_getinfo, handle, info); }
int curl_multi_setopt(void *multi, int option, ...) { FORWARD_ONE(multi_setopt, multi, option); }

#else
int clazycurl_present(void) { return 0; }
#endif
