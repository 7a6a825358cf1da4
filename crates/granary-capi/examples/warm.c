/* warm.c: granary's C API end to end, as an engine uses it (docs/C-API.md walks through it).
 *
 *   warm ARCHIVE [--workers N]
 *
 * Creates its own Vulkan 1.3 instance and device (the first Vulkan 1.3 device, every core and
 * Vulkan 1.1 feature it supports, dynamic rendering, graphics pipeline libraries where the
 * device has them), hands them to granary, requests every pipeline of ARCHIVE, and drives the
 * creation a frame at a time: with `granary_warmup_pump` on this thread (2 ms per frame), or
 * with N worker threads owned by granary while this thread only polls. Then it prints the
 * statistics and exits 0 when every pipeline is ready and nothing failed.
 *
 * Exit status: 0 all ready; 1 a failure; 77 no Vulkan driver or device (nothing checked).
 * With GRANARY_VALIDATE=1 the instance enables VK_LAYER_KHRONOS_validation and every WARNING
 * or ERROR message not listed in GRANARY_VALIDATE_EXPECT (comma-separated ids) is a failure.
 *
 * Build (docs/C-API.md): cc -I crates/granary-capi/include warm.c target/release/libgranary_capi.a \
 *   -lvulkan -lpthread -ldl -lm -o warm
 */
#include <granary.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#define EXIT_SKIPPED 77

static void on_log(void *user_data, uint32_t level, const char *message) {
    (void)user_data;
    const char *name = level == GRANARY_LOG_ERROR ? "error" : level == GRANARY_LOG_WARN ? "warning" : "info";
    fprintf(stderr, "granary %s: %s\n", name, message);
}

/* Prints a granary failure with its code and message (this thread's last error). */
static int failed(const char *what, GranaryResult result) {
    GranaryErrorInfo info = {.struct_size = sizeof info};
    granary_last_error(&info);
    fprintf(stderr, "%s: %s (VkResult %d): %s\n", what, granary_result_name(result), info.vk_result, info.message);
    return 1;
}

/* ---- the validation layer (GRANARY_VALIDATE=1), as the Rust tests use it ---- */

static int unexpected_messages = 0;
static int expected_messages = 0;

static int is_expected(const char *id) {
    const char *list = getenv("GRANARY_VALIDATE_EXPECT");
    size_t n = strlen(id);
    while (list && *list) {
        const char *end = strchr(list, ',');
        size_t len = end ? (size_t)(end - list) : strlen(list);
        if (len == n && n > 0 && strncmp(list, id, n) == 0) return 1;
        list = end ? end + 1 : NULL;
    }
    return 0;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT types,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                    void *user_data) {
    (void)types;
    (void)user_data;
    const char *id = data->pMessageIdName ? data->pMessageIdName : "";
    if (is_expected(id)) {
        expected_messages++;
    } else {
        unexpected_messages++;
        fprintf(stderr, "validation %s %s: %s\n",
                severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "ERROR" : "WARNING", id, data->pMessage);
    }
    return VK_FALSE;
}

static int has_extension(const VkExtensionProperties *all, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(all[i].extensionName, name) == 0) return 1;
    return 0;
}

static double ms(uint64_t ns) { return (double)ns / 1e6; }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s ARCHIVE [--workers N] [--sidecar FILE] [--record FILE]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    uint32_t workers = 0;
    const char *sidecar = NULL; /* the after-update sidecar, in the game's writable data */
    const char *record = NULL;  /* a use record, for `granary harvest --add-recorded` */
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--workers") == 0) workers = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--sidecar") == 0) sidecar = argv[i + 1];
        else if (strcmp(argv[i], "--record") == 0) record = argv[i + 1];
    }
    const char *validate_env = getenv("GRANARY_VALIDATE");
    int validate = validate_env && strcmp(validate_env, "1") == 0;
    if ((granary_capi_version() >> 16) != GRANARY_CAPI_VERSION_MAJOR) {
        fprintf(stderr, "libgranary_capi is version %u.%u, granary.h is %u.x\n", granary_capi_version() >> 16,
                granary_capi_version() & 0xffff, GRANARY_CAPI_VERSION_MAJOR);
        return 1;
    }

    /* ---- the application's own Vulkan objects ---- */
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "granary warm.c",
        .apiVersion = VK_API_VERSION_1_3,
    };
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *instance_extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
    };
    VkInstanceCreateInfo instance_info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    if (validate) {
        uint32_t n = 0;
        vkEnumerateInstanceLayerProperties(&n, NULL);
        VkLayerProperties *have = calloc(n ? n : 1, sizeof *have);
        vkEnumerateInstanceLayerProperties(&n, have);
        int found = 0;
        for (uint32_t i = 0; i < n; i++) found |= strcmp(have[i].layerName, layers[0]) == 0;
        free(have);
        if (!found) {
            fprintf(stderr, "GRANARY_VALIDATE=1 needs %s (Debian: apt-get install vulkan-validationlayers)\n", layers[0]);
            return 1;
        }
        instance_info.pNext = &messenger_info;
        instance_info.enabledLayerCount = 1;
        instance_info.ppEnabledLayerNames = layers;
        instance_info.enabledExtensionCount = 1;
        instance_info.ppEnabledExtensionNames = instance_extensions;
    }
    VkInstance instance;
    VkResult vr = vkCreateInstance(&instance_info, NULL, &instance);
    if (vr == VK_ERROR_INCOMPATIBLE_DRIVER || vr == VK_ERROR_INITIALIZATION_FAILED) {
        printf("SKIPPED: no Vulkan driver (vkCreateInstance: %d)\n", vr);
        return EXIT_SKIPPED;
    }
    if (vr != VK_SUCCESS) {
        fprintf(stderr, "vkCreateInstance: %d\n", vr);
        return 1;
    }
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
        if (!create_messenger || create_messenger(instance, &messenger_info, NULL, &messenger) != VK_SUCCESS) {
            fprintf(stderr, "vkCreateDebugUtilsMessengerEXT failed\n");
            return 1;
        }
    }

    uint32_t device_count = 0;
    vkEnumeratePhysicalDevices(instance, &device_count, NULL);
    VkPhysicalDevice *devices = calloc(device_count ? device_count : 1, sizeof *devices);
    vkEnumeratePhysicalDevices(instance, &device_count, devices);
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties properties;
    for (uint32_t i = 0; i < device_count && physical == VK_NULL_HANDLE; i++) {
        vkGetPhysicalDeviceProperties(devices[i], &properties);
        if (properties.apiVersion >= VK_API_VERSION_1_3) physical = devices[i];
    }
    free(devices);
    if (physical == VK_NULL_HANDLE) {
        printf("SKIPPED: no Vulkan 1.3 device (%u devices)\n", device_count);
        return EXIT_SKIPPED;
    }

    uint32_t extension_count = 0;
    vkEnumerateDeviceExtensionProperties(physical, NULL, &extension_count, NULL);
    VkExtensionProperties *available = calloc(extension_count ? extension_count : 1, sizeof *available);
    vkEnumerateDeviceExtensionProperties(physical, NULL, &extension_count, available);
    int libraries = has_extension(available, extension_count, "VK_EXT_graphics_pipeline_library") &&
                    has_extension(available, extension_count, "VK_KHR_pipeline_library");
    free(available);

    /* What the device supports, then what the application enables: every core and Vulkan 1.1
     * feature it has, dynamic rendering and maintenance4, and graphics pipeline libraries. */
    VkPhysicalDeviceGraphicsPipelineLibraryFeaturesEXT gpl = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GRAPHICS_PIPELINE_LIBRARY_FEATURES_EXT};
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                            .pNext = libraries ? &gpl : NULL};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f13};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    vkGetPhysicalDeviceFeatures2(physical, &features);
    if (!f13.dynamicRendering) {
        printf("SKIPPED: %s has no dynamicRendering\n", properties.deviceName);
        return EXIT_SKIPPED;
    }
    libraries = libraries && gpl.graphicsPipelineLibrary;
    VkPhysicalDeviceGraphicsPipelineLibraryFeaturesEXT enable_gpl = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GRAPHICS_PIPELINE_LIBRARY_FEATURES_EXT,
        .graphicsPipelineLibrary = VK_TRUE};
    VkPhysicalDeviceVulkan13Features enable13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                                 .pNext = libraries ? &enable_gpl : NULL,
                                                 .dynamicRendering = VK_TRUE,
                                                 .maintenance4 = f13.maintenance4};
    VkPhysicalDeviceVulkan11Features enable11 = f11;
    enable11.pNext = &enable13;
    const char *device_extensions[] = {"VK_KHR_pipeline_library", "VK_EXT_graphics_pipeline_library"};
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = 0,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
    VkDeviceCreateInfo device_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &enable11,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = libraries ? 2 : 0,
        .ppEnabledExtensionNames = device_extensions,
        .pEnabledFeatures = &features.features,
    };
    VkDevice device;
    vr = vkCreateDevice(physical, &device_info, NULL, &device);
    if (vr != VK_SUCCESS) {
        fprintf(stderr, "vkCreateDevice: %d\n", vr);
        return 1;
    }

    /* ---- granary ---- */
    granary_set_log_callback(on_log, NULL, GRANARY_LOG_INFO);
    GranaryArchive *archive = NULL;
    GranaryResult r = granary_archive_open(path, NULL, &archive);
    if (r != GRANARY_OK) return failed("granary_archive_open", r);
    size_t pipelines = 0;
    granary_archive_pipeline_count(archive, &pipelines);

    /* What the application enabled, exactly: granary refuses, by name and before the driver
     * sees it, a pipeline needing a feature that is not listed here. */
    GranaryVulkanDevice vulkan = {
        .struct_size = sizeof vulkan,
        .flags = libraries ? GRANARY_DEVICE_GRAPHICS_PIPELINE_LIBRARY : 0,
        .instance = instance,
        .physical_device = physical,
        .device = device,
        .get_instance_proc_addr = vkGetInstanceProcAddr,
        .get_device_proc_addr = vkGetDeviceProcAddr,
        .enabled_extensions = device_extensions,
        .enabled_extension_count = libraries ? 2 : 0,
        .enabled_features = &features.features,
        .enabled_vulkan11_features = &enable11,
        .allocator = NULL, /* not honoured yet: a non-NULL one is refused */
    };
    GranaryLoaderOptions options = {
        .struct_size = sizeof options, .sidecar_path = sidecar, .record_path = record}; /* zero: the defaults */
    GranaryLoader *loader = NULL;
    r = granary_loader_create(archive, &vulkan, &options, &loader);
    granary_archive_close(archive); /* the loader holds the archive */
    if (r != GRANARY_OK) return failed("granary_loader_create", r);
    char why[1024];
    if (granary_loader_mismatch(loader, why, sizeof why, NULL) == GRANARY_OK)
        printf("compiling from SPIR-V: %s\n", why);
    uint64_t sidecar_bytes = 0;
    uint32_t sidecar_status = granary_loader_sidecar_status(loader, &sidecar_bytes);

    GranaryWarmup *warmup = NULL;
    r = granary_warmup_create(loader, &warmup);
    granary_loader_destroy(loader); /* the warm-up holds the loader */
    if (r != GRANARY_OK) return failed("granary_warmup_create", r);

    /* Every pipeline (the labels starting with ""): first the count, then the tickets (asking
     * again gives the same tickets). */
    size_t count = 0;
    r = granary_warmup_request_prefix(warmup, "", GRANARY_PRIORITY_NORMAL, NULL, 0, &count);
    if (r != GRANARY_OK) return failed("granary_warmup_request_prefix", r);
    GranaryTicket *tickets = calloc(count ? count : 1, sizeof *tickets);
    r = granary_warmup_request_prefix(warmup, "", GRANARY_PRIORITY_NORMAL, tickets, count, &count);
    if (r != GRANARY_OK) return failed("granary_warmup_request_prefix", r);
    /* After a driver update: every pipeline at low priority, and the sidecar written when the
     * last one is done (by the pump or a worker, never by try_get). */
    size_t sidecar_requested = 0;
    r = granary_warmup_refresh_sidecar(warmup, GRANARY_PRIORITY_LOW, &sidecar_requested);
    if (r != GRANARY_OK) return failed("granary_warmup_refresh_sidecar", r);
    if (workers > 0) {
        r = granary_warmup_spawn_workers(warmup, workers);
        if (r != GRANARY_OK) return failed("granary_warmup_spawn_workers", r);
    }

    /* The frames: each creates for at most 2 ms (or lets the workers run) and polls every
     * ticket the way a renderer would before a draw. */
    int frames = 0;
    for (;;) {
        frames++;
        if (workers == 0) {
            r = granary_warmup_pump(warmup, 2000000, NULL);
            if (r < 0) return failed("granary_warmup_pump", r);
        } else {
            /* A loading screen: wait up to 1 ms for everything, then draw the frame. */
            r = granary_warmup_wait(warmup, NULL, 0, 1000000);
            if (r < 0) return failed("granary_warmup_wait", r);
        }
        size_t pending = 0;
        for (size_t i = 0; i < count; i++) {
            GranaryPipelineInfo info = {.struct_size = sizeof info};
            GranaryResult status = granary_warmup_try_get(warmup, tickets[i], &info);
            if (status == GRANARY_PENDING) {
                pending++;
            } else if (status == GRANARY_OK && info.pipeline == VK_NULL_HANDLE) {
                fprintf(stderr, "ticket %u is ready without a pipeline\n", tickets[i]);
                return 1;
            }
            /* GRANARY_OK: bind info.pipeline with info.layout here. */
        }
        if (pending == 0) break;
    }

    int ready = 0, failures = 0, absent = 0;
    for (size_t i = 0; i < count; i++) {
        GranaryPipelineInfo info = {.struct_size = sizeof info};
        GranaryResult status = granary_warmup_try_get(warmup, tickets[i], &info);
        if (status == GRANARY_OK) {
            ready++;
        } else if (status == GRANARY_NOT_FOUND) {
            absent++;
        } else {
            char message[1024];
            granary_warmup_failure(warmup, tickets[i], message, sizeof message, NULL);
            fprintf(stderr, "pipeline %016" PRIx64 "%016" PRIx64 ": %s (VkResult %d): %s\n", info.key_hi, info.key_lo,
                    granary_result_name(status), info.vk_result, message);
            failures++;
        }
    }

    GranaryWarmupStats ws = {.struct_size = sizeof ws};
    GranaryLoaderStats ls = {.struct_size = sizeof ls};
    if ((r = granary_warmup_stats(warmup, &ws)) != GRANARY_OK) return failed("granary_warmup_stats", r);
    if ((r = granary_warmup_loader_stats(warmup, &ls)) != GRANARY_OK) return failed("granary_warmup_loader_stats", r);
    printf("device: %s; %zu pipelines in the archive, %zu tickets, %s, %d frames\n", properties.deviceName, pipelines,
           count, workers ? "workers" : "pump", frames);
    printf("warmup: requested=%" PRIu64 " ready=%" PRIu64 " failed=%" PRIu64 " absent=%" PRIu64 " pending=%" PRIu64
           " requested_too_late=%" PRIu64 " deduplicated=%" PRIu64 "\n",
           ws.requested, ws.ready, ws.failed, ws.absent, ws.pending, ws.requested_too_late, ws.deduplicated);
    printf("loader: from_binaries=%" PRIu64 " cache_hits=%" PRIu64 " compiled=%" PRIu64 " failed=%" PRIu64
           " not_found=%" PRIu64 " key_mismatches=%" PRIu64 "\n",
           ls.from_binaries, ls.cache_hits, ls.compiled, ls.failed, ls.not_found, ls.key_mismatches);
    printf("latency: binaries p50 %.3f ms p99 %.3f ms; cache hits p50 %.3f ms p99 %.3f ms; compiled p50 %.3f ms p99 "
           "%.3f ms\n",
           ms(ls.binaries_latency.p50_ns), ms(ls.binaries_latency.p99_ns), ms(ls.cache_hit_latency.p50_ns),
           ms(ls.cache_hit_latency.p99_ns), ms(ls.compile_latency.p50_ns), ms(ls.compile_latency.p99_ns));
    printf("tickets: ready=%d failed=%d absent=%d\n", ready, failures, absent);
    if (sidecar) {
        /* Workers may still be finishing the sidecar's last requests: wait for them. */
        uint64_t written = 0;
        if (sidecar_requested > 0) {
            /* `wait` returns after the write: the thread that finishes the last request writes
             * the sidecar before marking it done. */
            r = granary_warmup_wait(warmup, NULL, 0, 60000000000ull);
            if (r != GRANARY_OK) return failed("granary_warmup_wait", r);
            r = granary_warmup_sidecar_saved(warmup, &written);
            if (r != GRANARY_OK) return failed("granary_warmup_sidecar_saved", r);
        }
        printf("sidecar: status=%u read_bytes=%" PRIu64 " requested=%zu written_bytes=%" PRIu64 "\n", sidecar_status,
               sidecar_bytes, sidecar_requested, written);
    }

    /* The edges: a ticket granary did not issue, a label and a key the archive does not hold. */
    int checks = 0;
    GranaryPipelineInfo probe = {.struct_size = sizeof probe};
    checks += granary_warmup_try_get(warmup, GRANARY_TICKET_NONE, &probe) != GRANARY_ERROR_INVALID_ARGUMENT;
    checks += granary_warmup_try_get(warmup, (GranaryTicket)count + 1000, &probe) != GRANARY_ERROR_INVALID_ARGUMENT;
    const char *unknown_label[] = {"no/such/pipeline"};
    GranaryTicket none = 1;
    checks += granary_warmup_request_labels(warmup, unknown_label, 1, GRANARY_PRIORITY_HIGH, &none) != GRANARY_NOT_FOUND;
    checks += none != GRANARY_TICKET_NONE;
    GranaryTicket absent_ticket = GRANARY_TICKET_NONE;
    checks += granary_warmup_request_key(warmup, 0xdeadull, 0xbeefull, GRANARY_PRIORITY_CRITICAL, &absent_ticket) != GRANARY_OK;
    while (granary_warmup_try_get(warmup, absent_ticket, NULL) == GRANARY_PENDING) granary_warmup_pump(warmup, 0, NULL);
    checks += granary_warmup_wait(warmup, &absent_ticket, 1, 0) != GRANARY_OK;
    checks += granary_warmup_try_get(warmup, absent_ticket, &probe) != GRANARY_NOT_FOUND;
    char absent_why[256] = "";
    granary_warmup_failure(warmup, absent_ticket, absent_why, sizeof absent_why, NULL);
    checks += strstr(absent_why, "no pipeline with key") == NULL;
    printf("checks: failed=%d\n", checks);

    /* Granary's objects first (the warm-up owns the pipelines: wait for the GPU before), then
     * the application's. */
    vkDeviceWaitIdle(device);
    granary_warmup_destroy(warmup);
    free(tickets);
    vkDestroyDevice(device, NULL);
    if (messenger != VK_NULL_HANDLE) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
        destroy_messenger(instance, messenger, NULL);
    }
    vkDestroyInstance(instance, NULL);
    if (validate) printf("validation: unexpected=%d expected=%d\n", unexpected_messages, expected_messages);
    return ready == (int)count && failures == 0 && absent == 0 && checks == 0 && unexpected_messages == 0 ? 0 : 1;
}
