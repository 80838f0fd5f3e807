// Messages of errors the JS engine raises by itself: an input reached code that did not
// check it. Shared by the fuzz worker and the scripts its targets run as job ranks.
'use strict';
module.exports.ENGINE_ERROR = /Cannot read propert|Cannot set propert|is not a function|is not iterable|(undefined|null) is not (an object|a constructor)|Maximum call stack|Invalid array length|Invalid typed array length|out of memory/i;
