/* The CUDA backend's entry points in a build without nvcc: no GPU. */
#include <stdio.h>

#include "train.h"

int train_cuda_devices(void)
{
    return 0;
}

int train_cuda(const TrainConfig *cfg, const Dataset *train, const Dataset *val,
               TrainReportFn report, void *ctx, char *why, size_t size)
{
    (void)cfg, (void)train, (void)val, (void)report, (void)ctx;
    snprintf(why, size, "this rung-train was built without CUDA (no nvcc at build time)");
    return -1;
}

int train_cuda_unique_id(unsigned char *id, char *why, size_t size)
{
    (void)id;
    snprintf(why, size, "this rung-train was built without CUDA (no nvcc at build time)");
    return -1;
}
