# Knowledge-base files embedded into the binary (paths relative to this folder).
set(DLRIG_DATA_FILES "")
foreach(f IN ITEMS
    archs.csv
    arm_cpus.csv
    attention_achieved.csv
    cloud.csv
    cuda_drivers.csv
    cudnn.csv
    fx.csv
    gemm_achieved.csv
    gpu_families.csv
    gpus.csv
    links.csv
    model_heads.csv
    model_types.json
    models.json
    p2p_hangs.csv
    part_prices.csv
    platforms.csv
    prices.csv
    sizing.csv
    torch.csv)
  list(APPEND DLRIG_DATA_FILES ${CMAKE_CURRENT_LIST_DIR}/${f})
endforeach()
