-- 0007: personal API tokens may expire (POST /api/tokens `expiresAt`); null = never. An expired token
-- is refused like a revoked one.
alter table api_tokens add column expires_at timestamptz;
