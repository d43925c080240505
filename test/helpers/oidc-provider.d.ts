// oidc-provider ships no types; the tests use a small part of it (test/helpers/oidc.ts).
declare module 'oidc-provider';
