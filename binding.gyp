# The CPU-only build, for machines without cmake. The main build is CMakeLists.txt
# (through cmake-js); both read their source lists from native/sources.gypi, which is
# JSON and so also a valid gyp include.
{
  'includes': ['native/sources.gypi'],
  'targets': [
    {
      'target_name': 'hb',
      'sources': ['<@(hb_sources)', '<@(hb_cpu_only_sources)', '<@(hb_no_gloo_sources)'],
      'include_dirs': [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        '.'
      ],
      'defines': ['NAPI_VERSION=8', 'NAPI_CPP_EXCEPTIONS', 'NODE_ADDON_API_DISABLE_DEPRECATED', 'NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS'],
      'cflags!': ['-fno-exceptions'],
      'cflags_cc!': ['-fno-exceptions', '-fno-rtti', '-std=gnu++14', '-std=gnu++17'],
      'cflags_cc': ['-std=c++17', '-O3', '-ffp-contract=off', '-fno-math-errno', '-fvisibility=hidden', '-Wall'],
      'xcode_settings': {
        'GCC_ENABLE_CPP_EXCEPTIONS': 'YES',
        'CLANG_CXX_LANGUAGE_STANDARD': 'c++17',
        'OTHER_CPLUSPLUSFLAGS': ['-ffp-contract=off']
      },
      # -lrt: shm_open lives in librt before glibc 2.34 (an empty stub after).
      'libraries': ['-lpthread', '-ldl', '-lrt'],
      # See CMakeLists.txt: the addon's threads outlive worker environments.
      'ldflags': ['-Wl,-z,nodelete']
    }
  ]
}
