{
  "variables": {
    "hb_sources": [
      "native/core/buffer.cc",
      "native/core/device.cc",
      "native/core/dtype.cc",
      "native/core/executor.cc",
      "native/core/tensor.cc",
      "native/core/thread_pool.cc",
      "native/kernels/embedding_lookup_cpu.cc",
      "native/kernels/random_fill_cpu.cc",
      "native/kernels/string_hash_cpu.cc",
      "native/kernels/unique_partition_cpu.cc",
      "native/kernels/sparse_grad_cpu.cc",
      "native/kernels/feature_transform_cpu.cc",
      "native/kernels/vocabulary_table.cc",
      "native/train/optimizer_apply.cc",
      "native/train/embedding_backward.cc",
      "native/embedding/embedding_lookup.cc",
      "native/embedding/id_routing.cc",
      "native/binding/addon.cc",
      "native/binding/arguments.cc",
      "native/binding/async_task.cc",
      "native/binding/backend_binding.cc",
      "native/binding/embedding_binding.cc",
      "native/binding/lookup_arguments.cc",
      "native/binding/routing_binding.cc",
      "native/binding/train_binding.cc",
      "native/binding/feature_binding.cc",
      "native/binding/strings_binding.cc",
      "native/binding/tensor_binding.cc",
      "native/binding/tensor_handle.cc"
    ],
    "hb_cpu_only_sources": [
      "native/core/cuda_unavailable.cc"
    ],
    "hb_cuda_sources": [
      "cuda/cuda_runtime.cu",
      "cuda/embedding_lookup.cu",
      "cuda/random_fill.cu",
      "cuda/unique_partition.cu",
      "cuda/optimizer_apply.cu",
      "cuda/library_loader.cc"
    ]
  }
}
