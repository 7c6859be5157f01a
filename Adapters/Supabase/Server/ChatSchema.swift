/// The chat schema (conversations, members, messages, reactions, receipts) with row-level security for a
import SwitchboardPostgres
/// Supabase-like server: roles, `auth.uid()`/`auth.role()`, one change-version sequence, policies and
/// the edit/delete windows, all enforced inside PostgreSQL. Every migration is idempotent.
public enum ChatSchema {
    /// Ordered, named, idempotent migrations; apply them in order (see `apply(to:)`).
    public static let migrations: [(name: String, sql: String)] = [
        (name: "001_roles", sql: roles),
        (name: "002_auth_helpers", sql: authHelpers),
        (name: "003_tables", sql: tables),
        (name: "004_versions", sql: versions),
        (name: "005_guards", sql: guards),
        (name: "006_grants", sql: grants),
        (name: "007_row_level_security", sql: rowLevelSecurity),
        (name: "008_sync_columns", sql: syncColumns),
        (name: "009_named_conversation", sql: namedConversation),
    ]

    /// Applies every migration in order, each in its own transaction, serialised by an advisory lock.
    public static func apply(to connection: PostgresConnection) throws {
        for migration in migrations { try applyOne(migration.sql, to: connection) }
    }

    /// Runs one idempotent schema script in its own transaction under the schema lock (so servers starting together
    /// on one database apply it once), notices about existing objects silenced.
    static func applyOne(_ sql: String, to connection: PostgresConnection) throws {
        try connection.transaction { connection in
            try connection.execute("SET LOCAL client_min_messages = warning")
            try connection.execute("SELECT pg_advisory_xact_lock(7031843571)")
            try connection.execute(sql)
        }
    }

    /// Delta sync per conversation: reactions and receipts carry their message's conversation (set by trigger,
    /// never by the client), and a reaction is removed by clearing `active`, so the removal bumps `version` and
    /// reaches a client that was offline, where a DELETE would leave nothing behind to sync.
    private static let syncColumns = """
        ALTER TABLE public.reactions ADD COLUMN IF NOT EXISTS conversation_id uuid;
        ALTER TABLE public.reactions ADD COLUMN IF NOT EXISTS active boolean NOT NULL DEFAULT true;
        ALTER TABLE public.receipts ADD COLUMN IF NOT EXISTS conversation_id uuid;

        CREATE OR REPLACE FUNCTION public.fill_conversation() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        BEGIN
          SELECT m.conversation_id INTO NEW.conversation_id FROM public.messages m WHERE m.id = NEW.message_id;
          RETURN NEW;
        END
        $$;
        CREATE OR REPLACE TRIGGER reactions_conversation BEFORE INSERT OR UPDATE ON public.reactions
          FOR EACH ROW EXECUTE FUNCTION public.fill_conversation();
        CREATE OR REPLACE TRIGGER receipts_conversation BEFORE INSERT OR UPDATE ON public.receipts
          FOR EACH ROW EXECUTE FUNCTION public.fill_conversation();

        UPDATE public.reactions r SET conversation_id = m.conversation_id
          FROM public.messages m WHERE m.id = r.message_id AND r.conversation_id IS NULL;
        UPDATE public.receipts r SET conversation_id = m.conversation_id
          FROM public.messages m WHERE m.id = r.message_id AND r.conversation_id IS NULL;

        CREATE INDEX IF NOT EXISTS messages_conversation_version_idx ON public.messages (conversation_id, version);
        CREATE INDEX IF NOT EXISTS reactions_conversation_version_idx ON public.reactions (conversation_id, version);
        CREATE INDEX IF NOT EXISTS receipts_conversation_version_idx ON public.receipts (conversation_id, version);

        -- Every change read names its conversation. With a version-only index next to these, the planner read a
        -- quiet conversation's `version > N ORDER BY version LIMIT n` along the global version order, passing
        -- every newer change of every other conversation (its cost followed the server's traffic, not the gap).
        DROP INDEX IF EXISTS public.messages_version_idx;
        DROP INDEX IF EXISTS public.reactions_version_idx;
        DROP INDEX IF EXISTS public.receipts_version_idx;
        """

    /// A reaction or receipt that names a conversation must name its message's: a client acting on a message "in
    /// conversation A" can then never touch a message of conversation B, which it may also belong to. The row still
    /// takes its conversation from the message, so one that names none is filled in as before. `PT404` is
    /// PostgREST's way of answering 404 from SQL: the message was not found in that conversation.
    private static let namedConversation = """
        CREATE OR REPLACE FUNCTION public.fill_conversation() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        DECLARE
          actual uuid;
        BEGIN
          SELECT m.conversation_id INTO actual FROM public.messages m WHERE m.id = NEW.message_id;
          IF NEW.conversation_id IS NOT NULL AND actual IS NOT NULL AND NEW.conversation_id IS DISTINCT FROM actual THEN
            RAISE EXCEPTION 'message % is not in conversation %', NEW.message_id, NEW.conversation_id
              USING ERRCODE = 'PT404';
          END IF;
          NEW.conversation_id := actual;
          RETURN NEW;
        END
        $$;
        """

    private static let roles = """
        DO $$
        DECLARE
          granted text;
        BEGIN
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'anon') THEN
            CREATE ROLE anon NOLOGIN NOINHERIT;
          END IF;
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'authenticated') THEN
            CREATE ROLE authenticated NOLOGIN NOINHERIT;
          END IF;
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'service_role') THEN
            CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;
          END IF;
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'authenticator') THEN
            CREATE ROLE authenticator LOGIN NOINHERIT;
          END IF;
          FOREACH granted IN ARRAY ARRAY['anon', 'authenticated', 'service_role'] LOOP
            IF NOT EXISTS (
              SELECT FROM pg_auth_members m
              JOIN pg_roles r ON r.oid = m.roleid
              JOIN pg_roles u ON u.oid = m.member
              WHERE r.rolname = granted AND u.rolname = 'authenticator'
            ) THEN
              EXECUTE format('GRANT %I TO authenticator', granted);
            END IF;
          END LOOP;
        END
        $$;
        """

    private static let authHelpers = """
        CREATE SCHEMA IF NOT EXISTS auth;

        CREATE OR REPLACE FUNCTION auth.uid() RETURNS text
        LANGUAGE sql STABLE AS $$
          SELECT nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
        $$;

        CREATE OR REPLACE FUNCTION auth.role() RETURNS text
        LANGUAGE sql STABLE AS $$
          SELECT coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role',
                          current_user::text)
        $$;

        -- True for superusers, BYPASSRLS roles (service_role) and members of service_role
        -- (e.g. authenticator) presenting service_role claims.
        CREATE OR REPLACE FUNCTION auth.is_service() RETURNS boolean
        LANGUAGE sql STABLE AS $$
          SELECT coalesce((SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user), false)
              OR (auth.role() = 'service_role' AND pg_has_role(current_user, 'service_role', 'MEMBER'))
        $$;

        GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role;
        GRANT EXECUTE ON FUNCTION auth.uid(), auth.role(), auth.is_service() TO anon, authenticated, service_role;
        """

    private static let tables = """
        CREATE TABLE IF NOT EXISTS public.conversations (
          id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
          title text,
          is_group boolean NOT NULL DEFAULT false,
          created_at timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE IF NOT EXISTS public.members (
          conversation_id uuid NOT NULL REFERENCES public.conversations (id) ON DELETE CASCADE,
          user_id text NOT NULL,
          role text NOT NULL DEFAULT 'member',
          PRIMARY KEY (conversation_id, user_id)
        );
        CREATE INDEX IF NOT EXISTS members_user_idx ON public.members (user_id, conversation_id);

        CREATE TABLE IF NOT EXISTS public.messages (
          id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
          conversation_id uuid NOT NULL REFERENCES public.conversations (id) ON DELETE CASCADE,
          sender_id text NOT NULL,
          body text NOT NULL DEFAULT '',
          reply_to uuid,
          attachments jsonb NOT NULL DEFAULT '[]',
          metadata jsonb NOT NULL DEFAULT '{}',
          created_at timestamptz NOT NULL DEFAULT now(),
          edited_at timestamptz,
          deleted_at timestamptz,
          version bigint NOT NULL
        );
        CREATE INDEX IF NOT EXISTS messages_conversation_created_idx
          ON public.messages (conversation_id, created_at, id);

        CREATE TABLE IF NOT EXISTS public.reactions (
          message_id uuid NOT NULL REFERENCES public.messages (id) ON DELETE CASCADE,
          user_id text NOT NULL,
          symbol text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          version bigint NOT NULL,
          PRIMARY KEY (message_id, user_id, symbol)
        );

        CREATE TABLE IF NOT EXISTS public.receipts (
          message_id uuid NOT NULL REFERENCES public.messages (id) ON DELETE CASCADE,
          user_id text NOT NULL,
          state text NOT NULL CHECK (state IN ('delivered', 'read')),
          at timestamptz NOT NULL DEFAULT now(),
          version bigint NOT NULL,
          PRIMARY KEY (message_id, user_id)
        );
        """

    private static let versions = """
        CREATE SEQUENCE IF NOT EXISTS public.change_version;

        -- SECURITY DEFINER so callers need no privilege on the sequence.
        CREATE OR REPLACE FUNCTION public.bump_version() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        BEGIN
          -- Versions must become visible in order, or a delta sync reading "version > N" could pass over a
          -- smaller version still uncommitted. Writers of chat rows therefore hold one transaction-scoped lock
          -- from their first versioned row to commit: commit order equals version order.
          PERFORM pg_advisory_xact_lock(7031843572);
          NEW.version := nextval('public.change_version');
          RETURN NEW;
        END
        $$;

        -- Named "*_version" so they fire after the "*_guard" triggers (triggers fire in name order).
        CREATE OR REPLACE TRIGGER messages_version BEFORE INSERT OR UPDATE ON public.messages
          FOR EACH ROW EXECUTE FUNCTION public.bump_version();
        CREATE OR REPLACE TRIGGER reactions_version BEFORE INSERT OR UPDATE ON public.reactions
          FOR EACH ROW EXECUTE FUNCTION public.bump_version();
        CREATE OR REPLACE TRIGGER receipts_version BEFORE INSERT OR UPDATE ON public.receipts
          FOR EACH ROW EXECUTE FUNCTION public.bump_version();
        """

    private static let guards = """
        CREATE OR REPLACE FUNCTION public.messages_guard() RETURNS trigger
        LANGUAGE plpgsql AS $$
        DECLARE
          privileged boolean := auth.is_service();
        BEGIN
          IF TG_OP = 'DELETE' THEN
            IF NOT privileged AND now() > OLD.created_at + interval '2 hours' THEN
              RAISE EXCEPTION 'messages can only be deleted within 2 hours of being sent'
                USING ERRCODE = 'insufficient_privilege';
            END IF;
            RETURN OLD;
          END IF;
          IF NEW.id IS DISTINCT FROM OLD.id
             OR NEW.sender_id IS DISTINCT FROM OLD.sender_id
             OR NEW.conversation_id IS DISTINCT FROM OLD.conversation_id
             OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
            RAISE EXCEPTION 'id, sender_id, conversation_id and created_at of a message cannot change'
              USING ERRCODE = 'insufficient_privilege';
          END IF;
          IF NEW.body IS DISTINCT FROM OLD.body OR NEW.attachments IS DISTINCT FROM OLD.attachments THEN
            IF NOT privileged AND OLD.deleted_at IS NOT NULL THEN
              RAISE EXCEPTION 'a deleted message cannot be edited'
                USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF NOT privileged AND now() > OLD.created_at + interval '15 minutes' THEN
              RAISE EXCEPTION 'messages can only be edited within 15 minutes of being sent'
                USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF NEW.edited_at IS NOT DISTINCT FROM OLD.edited_at THEN
              NEW.edited_at := now();
            END IF;
          END IF;
          IF NOT privileged AND OLD.deleted_at IS NOT NULL AND NEW.deleted_at IS DISTINCT FROM OLD.deleted_at THEN
            RAISE EXCEPTION 'a deleted message cannot be restored or re-deleted'
              USING ERRCODE = 'insufficient_privilege';
          END IF;
          IF NOT privileged AND OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL
             AND now() > OLD.created_at + interval '2 hours' THEN
            RAISE EXCEPTION 'messages can only be deleted within 2 hours of being sent'
              USING ERRCODE = 'insufficient_privilege';
          END IF;
          RETURN NEW;
        END
        $$;

        CREATE OR REPLACE TRIGGER messages_guard BEFORE UPDATE OR DELETE ON public.messages
          FOR EACH ROW EXECUTE FUNCTION public.messages_guard();

        -- A receipt never steps back from read to delivered: such an update is ignored (the row is
        -- skipped, keeping state, time and version), which keeps upserts of stale receipts harmless.
        CREATE OR REPLACE FUNCTION public.receipts_guard() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.message_id IS DISTINCT FROM OLD.message_id OR NEW.user_id IS DISTINCT FROM OLD.user_id THEN
            RAISE EXCEPTION 'message_id and user_id of a receipt cannot change'
              USING ERRCODE = 'insufficient_privilege';
          END IF;
          IF OLD.state = 'read' AND NEW.state = 'delivered' THEN
            RETURN NULL;
          END IF;
          RETURN NEW;
        END
        $$;

        CREATE OR REPLACE TRIGGER receipts_guard BEFORE UPDATE ON public.receipts
          FOR EACH ROW EXECUTE FUNCTION public.receipts_guard();
        """

    private static let grants = """
        GRANT USAGE ON SCHEMA public TO anon, authenticated, service_role;
        GRANT SELECT ON public.conversations, public.members TO authenticated;
        GRANT SELECT, INSERT, UPDATE, DELETE ON public.messages, public.reactions, public.receipts TO authenticated;
        GRANT SELECT, INSERT, UPDATE, DELETE
          ON public.conversations, public.members, public.messages, public.reactions, public.receipts
          TO service_role;
        GRANT USAGE, SELECT ON SEQUENCE public.change_version TO service_role;
        """

    private static let rowLevelSecurity = """
        -- SECURITY DEFINER helpers read members/messages without RLS, so policies never recurse.
        CREATE OR REPLACE FUNCTION public.is_member(conversation uuid) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
          SELECT EXISTS (
            SELECT 1 FROM public.members m
            WHERE m.conversation_id = conversation AND m.user_id = auth.uid()
          )
        $$;

        CREATE OR REPLACE FUNCTION public.can_access_message(message uuid) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
          SELECT EXISTS (
            SELECT 1 FROM public.messages msg
            JOIN public.members m ON m.conversation_id = msg.conversation_id
            WHERE msg.id = message AND m.user_id = auth.uid()
          )
        $$;

        -- The caller's conversations, for policies over many rows: `conversation_id IN (SELECT ...)` runs it once
        -- per statement (a hashed subplan) where `is_member(conversation_id)` runs once per row.
        CREATE OR REPLACE FUNCTION public.member_conversations() RETURNS SETOF uuid
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
          SELECT m.conversation_id FROM public.members m WHERE m.user_id = auth.uid()
        $$;

        REVOKE ALL ON FUNCTION public.is_member(uuid), public.can_access_message(uuid), public.member_conversations()
          FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.is_member(uuid), public.can_access_message(uuid), public.member_conversations()
          TO authenticated, service_role;

        ALTER TABLE public.conversations ENABLE ROW LEVEL SECURITY;
        ALTER TABLE public.members ENABLE ROW LEVEL SECURITY;
        ALTER TABLE public.messages ENABLE ROW LEVEL SECURITY;
        ALTER TABLE public.reactions ENABLE ROW LEVEL SECURITY;
        ALTER TABLE public.receipts ENABLE ROW LEVEL SECURITY;

        DROP POLICY IF EXISTS conversations_select ON public.conversations;
        CREATE POLICY conversations_select ON public.conversations FOR SELECT TO authenticated
          USING (public.is_member(id));

        DROP POLICY IF EXISTS members_select ON public.members;
        CREATE POLICY members_select ON public.members FOR SELECT TO authenticated
          USING (public.is_member(conversation_id));

        -- Messages are read and written in bulk: membership is one set per statement and the caller's id one
        -- init plan (`(SELECT auth.uid())`), not a function call and a claims parse per row; same rule as is_member.
        DROP POLICY IF EXISTS messages_select ON public.messages;
        CREATE POLICY messages_select ON public.messages FOR SELECT TO authenticated
          USING (conversation_id IN (SELECT public.member_conversations()));
        DROP POLICY IF EXISTS messages_insert ON public.messages;
        CREATE POLICY messages_insert ON public.messages FOR INSERT TO authenticated
          WITH CHECK (sender_id = (SELECT auth.uid()) AND conversation_id IN (SELECT public.member_conversations()));
        DROP POLICY IF EXISTS messages_update ON public.messages;
        CREATE POLICY messages_update ON public.messages FOR UPDATE TO authenticated
          USING (sender_id = (SELECT auth.uid()) AND conversation_id IN (SELECT public.member_conversations()))
          WITH CHECK (sender_id = (SELECT auth.uid()) AND conversation_id IN (SELECT public.member_conversations()));
        DROP POLICY IF EXISTS messages_delete ON public.messages;
        CREATE POLICY messages_delete ON public.messages FOR DELETE TO authenticated
          USING (sender_id = (SELECT auth.uid()) AND conversation_id IN (SELECT public.member_conversations()));

        \(userRowPolicies("reactions"))

        \(userRowPolicies("receipts"))
        """

    /// The policies of a table of users' rows on messages (`reactions`, `receipts`): whoever may see the message
    /// reads them; each user writes only their own.
    private static func userRowPolicies(_ table: String) -> String {
        """
        DROP POLICY IF EXISTS \(table)_select ON public.\(table);
        CREATE POLICY \(table)_select ON public.\(table) FOR SELECT TO authenticated
          USING (public.can_access_message(message_id));
        DROP POLICY IF EXISTS \(table)_insert ON public.\(table);
        CREATE POLICY \(table)_insert ON public.\(table) FOR INSERT TO authenticated
          WITH CHECK (user_id = auth.uid() AND public.can_access_message(message_id));
        DROP POLICY IF EXISTS \(table)_update ON public.\(table);
        CREATE POLICY \(table)_update ON public.\(table) FOR UPDATE TO authenticated
          USING (user_id = auth.uid() AND public.can_access_message(message_id))
          WITH CHECK (user_id = auth.uid() AND public.can_access_message(message_id));
        DROP POLICY IF EXISTS \(table)_delete ON public.\(table);
        CREATE POLICY \(table)_delete ON public.\(table) FOR DELETE TO authenticated
          USING (user_id = auth.uid() AND public.can_access_message(message_id));
        """
    }
}
