#!/usr/bin/env node
'use strict';
require('../dist/cli/main')
  .main(process.argv)
  .catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
