# dlrig's declarations of cuBLASLt and NCCL against the toolkit's headers (label `abi`; exit 77 =
# skipped where the headers are absent).
add_test(NAME vendor_abi COMMAND ${CMAKE_CURRENT_LIST_DIR}/abi_test.sh)
set_tests_properties(vendor_abi PROPERTIES LABELS abi SKIP_RETURN_CODE 77
                     ENVIRONMENT "CXX=${CMAKE_CXX_COMPILER}")
