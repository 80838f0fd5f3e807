#!/usr/bin/env node
'use strict';
// Loading the CLI loads the addon: a failure there (not built, a bad HB_ADDON) is
// printed as its message, with the fix, not as a stack trace.
// --version answers without the addon: it is what a user asks first when something is off.
const first = process.argv[2];
if (first === '--version' || first === '-V') {
  console.log(require('../package.json').version);
  process.exit(0);
}
let cli;
try {
  cli = require('../dist/cli/main');
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
cli
  .main(process.argv)
  .catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
