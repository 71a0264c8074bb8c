/* The CUDA backend as a module (librung-train-cuda.so): its one export
 * hands rung-train the entry points (train.h, TrainCudaBackend), and the
 * module's own stop flag, which rung-train's SIGTERM handler sets. */
#include "train.h"

__attribute__((visibility("default"))) const TrainCudaBackend *rung_train_cuda_backend(void)
{
    static const TrainCudaBackend backend = {
        .abi = TRAIN_CUDA_ABI,
        .devices = train_cuda_devices,
        .train = train_cuda,
        .unique_id = train_cuda_unique_id,
        .stop = &train_stop_requested,
    };
    return &backend;
}
