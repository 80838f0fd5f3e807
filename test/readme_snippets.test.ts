// README's code must compile as written: every fenced block tagged ts / typescript (or js
// / javascript, checked as JavaScript with checkJs) is type-checked with the TypeScript
// compiler under `strict`, with 'hb-ts' resolved to this repository's lib/index.ts; json
// blocks must parse; sh / bash / console / text blocks are not compiled. A failure names
// the README line and the compiler's message.
//
// Directives, in an HTML comment right before a fence (blank lines between are allowed),
// so they do not show on the rendered page:
//   <!-- snippet: skip <why> -->        the block is not checked (the reason is required)
//   <!-- snippet: preamble              code prepended to the block, for fragments that use
//   declare const rows: hb.Tensor;      names defined elsewhere; its lines count as the
//   -->                                 README lines they are on
// A TypeScript block is an ES module (.mts: top-level await, `import * as hb from 'hb-ts'`);
// a JavaScript block that calls require() is CommonJS (.cjs), otherwise an ES module (.mjs).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

const root = path.resolve(__dirname, '..');

interface Snippet {
  /** Where it is, for messages: 'README.md:61'. */
  where: string;
  lang: string;
  /** The file checked: preamble and block; lineOf[i] is the document line (1-based) of its line i. */
  text: string;
  lineOf: number[];
  skip?: string;
}

const COMPILED: Record<string, 'ts' | 'js'> = { ts: 'ts', typescript: 'ts', js: 'js', javascript: 'js' };
const NOT_COMPILED = new Set(['sh', 'bash', 'shell', 'console', 'text']);

/** The fenced blocks of a Markdown document, with the directives before them. */
function snippetsOf(name: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const out: Snippet[] = [];
  let directive: { kind: 'skip'; why: string } | { kind: 'preamble'; lines: string[]; first: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const comment = /^<!--\s*snippet:\s*(\w+)(.*)$/.exec(line);
    if (comment) {
      const [, kind, rest] = comment;
      if (kind === 'skip') {
        const why = rest.replace(/-->\s*$/, '').trim();
        if (!why || !rest.includes('-->')) throw new Error(`${name}:${i + 1}: write <!-- snippet: skip <why> --> on one line, with the reason`);
        directive = { kind: 'skip', why };
      } else if (kind === 'preamble') {
        if (rest.trim() !== '') throw new Error(`${name}:${i + 1}: the preamble's code starts on the line after <!-- snippet: preamble`);
        const first = i + 2;
        const body: string[] = [];
        for (i++; i < lines.length && lines[i].trim() !== '-->'; i++) body.push(lines[i]);
        if (i === lines.length) throw new Error(`${name}:${first - 1}: the preamble has no closing --> line`);
        directive = { kind: 'preamble', lines: body, first };
      } else {
        throw new Error(`${name}:${i + 1}: unknown snippet directive '${kind}' (skip or preamble)`);
      }
      continue;
    }
    const fence = /^```(.*)$/.exec(line);
    if (fence) {
      const lang = fence[1].trim();
      const start = i + 1;
      const body: string[] = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
      if (i === lines.length) throw new Error(`${name}:${start}: the code block is not closed`);
      if (!lang) throw new Error(`${name}:${start}: the code block needs a language (ts, js, json, sh, text, ...)`);
      const pre = directive?.kind === 'preamble' ? directive : undefined;
      out.push({
        where: `${name}:${start}`,
        lang,
        text: [...(pre?.lines ?? []), ...body].join('\n'),
        lineOf: [...(pre?.lines.map((_, k) => pre.first + k) ?? []), ...body.map((_, k) => start + 1 + k)],
        skip: directive?.kind === 'skip' ? directive.why : undefined,
      });
      directive = undefined;
      continue;
    }
    if (line.trim() !== '' && directive) throw new Error(`${name}:${i + 1}: a snippet directive must come right before a code block`);
  }
  return out;
}

/** The snippet's file name in the program: its language and module kind. */
function fileNameOf(snippet: Snippet, index: number): string {
  const base = path.join(root, '__readme_snippets__', `snippet_${index}`);
  if (COMPILED[snippet.lang] === 'ts') return `${base}.mts`;
  return /\brequire\s*\(/.test(snippet.text) ? `${base}.cjs` : `${base}.mjs`;
}

/**
 * Type-checks the TypeScript and JavaScript snippets in one program (each its own module)
 * and checks the json ones; gives each snippet's problems as 'README.md:LINE:COL message'.
 */
function check(snippets: Snippet[]): Map<Snippet, string[]> {
  const problems = new Map<Snippet, string[]>(snippets.map((s) => [s, []]));
  const files = new Map<string, Snippet>();
  snippets.forEach((snippet, index) => {
    if (snippet.skip !== undefined) return;
    if (snippet.lang === 'json') {
      try {
        JSON.parse(snippet.text);
      } catch (error) {
        problems.get(snippet)!.push(`${snippet.where}: ${(error as Error).message}`);
      }
    } else if (COMPILED[snippet.lang]) {
      files.set(fileNameOf(snippet, index), snippet);
    } else if (!NOT_COMPILED.has(snippet.lang)) {
      problems.get(snippet)!.push(`${snippet.where}: a '${snippet.lang}' block is neither checked nor known to be left out; add it to the test or skip it with a reason`);
    }
  });
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    moduleDetection: ts.ModuleDetectionKind.Force,
    allowJs: true,
    checkJs: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
    typeRoots: [path.join(root, 'node_modules', '@types')],
    paths: { 'hb-ts': [path.join(root, 'lib', 'index.ts')] },
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (f) => files.has(f) || fileExists(f);
  host.readFile = (f) => files.get(f)?.text ?? readFile(f);
  host.getSourceFile = (f, language, onError, create) => {
    const snippet = files.get(f);
    return snippet ? ts.createSourceFile(f, snippet.text, language, true) : getSourceFile(f, language, onError, create);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const format = (d: ts.Diagnostic) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  const general = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
  for (const [fileName, snippet] of files) {
    const source = program.getSourceFile(fileName);
    const list = problems.get(snippet)!;
    if (!source) {
      list.push(`${snippet.where}: the compiler did not read the block`);
      continue;
    }
    list.push(...general.map((d) => `${snippet.where}: ${format(d)}`));
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const { line, character } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      list.push(`${snippet.where.replace(/:\d+$/, '')}:${snippet.lineOf[line] ?? '?'}:${character + 1} ${format(d)}`);
    }
  }
  return problems;
}

const readme = snippetsOf('README.md', fs.readFileSync(path.join(root, 'README.md'), 'utf8'));

// A document whose blocks must fail (and one that must pass), so the check is known to
// catch what it is for, and to name the right lines.
const canary = snippetsOf(
  'canary.md',
  [
    '# canary', //                                                             1
    '```ts', //                                                                2
    "import * as hb from 'hb-ts';", //                                         3
    'const n: number = hb.backend().device;', //                               4: TS2322
    '```', //                                                                  5
    '<!-- snippet: preamble', //                                               6
    "import * as hb from 'hb-ts';", //                                         7
    'const rows = hb.tensor([1, 2]);', //                                      8
    '-->', //                                                                  9
    '```js', //                                                                10
    'const s = rows.shape;', //                                                11
    "hb.setDevice('gpu');", //                                                 12: TS2345 (checkJs)
    '```', //                                                                  13
    '```json', //                                                              14
    '{ "a": 1, }', //                                                          15
    '```', //                                                                  16
    '<!-- snippet: skip not code -->', //                                      17
    '```ts', //                                                                18
    'this is not TypeScript', //                                               19
    '```', //                                                                  20
    '```ts', //                                                                21
    "import * as hb from 'hb-ts';", //                                         22
    'const ok: number = hb.tensor([1, 2]).shape[0];', //                       23
    '```', //                                                                  24
  ].join('\n'),
);

let results: Map<Snippet, string[]>;
beforeAll(() => {
  results = check([...readme, ...canary]);
}, 120_000);

describe('README snippets', () => {
  test('README has code blocks to check', () => {
    expect(readme.filter((s) => COMPILED[s.lang] && s.skip === undefined).length).toBeGreaterThanOrEqual(5);
  });

  test.each(readme.map((s) => [`${s.where} (${s.lang}${s.skip !== undefined ? `, skipped: ${s.skip}` : ''})`, s] as const))('%s compiles', (_, snippet) => {
    expect(results.get(snippet)).toEqual([]);
  });

  test('the check fails on broken blocks, at their README lines', () => {
    const [tsBlock, jsBlock, jsonBlock, skipped, good] = canary.map((s) => results.get(s)!);
    expect(tsBlock).toEqual([expect.stringMatching(/^canary\.md:4:7 TS2322: Type .* is not assignable to type 'number'/)]);
    expect(jsBlock).toEqual([expect.stringMatching(/^canary\.md:12:14 TS2345: Argument of type '"gpu"'/)]);
    expect(jsonBlock).toEqual([expect.stringMatching(/^canary\.md:14: /)]);
    expect(skipped).toEqual([]);
    expect(good).toEqual([]);
  });
});
