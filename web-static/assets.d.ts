// Style sheets in the admin pages' bundle (esbuild.config.mjs): `import './app.css'` adds it to the
// entry's hashed style sheet; `import css from '….css' with { type: 'text' }` gives its text.
declare module '*.css' {
  const text: string;
  export default text;
}
