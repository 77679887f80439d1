-- The environment scripts run in, set up once per Lua state (see
-- sandbox.rs). Everything not listed in `keep` leaves the globals, and the
-- globals table is closed: reading a missing global or making a new one is
-- an error, as in Redis 7.0.

local getinfo = debug.getinfo

-- Turns any error into the table Redis replies from: {err = text} with the
-- source and line of the script's code that failed (C functions, such as
-- error and redis.call, and this file's functions are passed over).
function __redis__err__handler(failure)
    local level = 2
    local at = getinfo(level, 'Sl')
    while at ~= nil and (at.what == 'C' or at.source == '=sandbox') do
        level = level + 1
        at = getinfo(level, 'Sl')
    end
    if type(failure) ~= 'table' then
        failure = { err = 'ERR ' .. tostring(failure) }
    end
    if at ~= nil then
        failure.source = at.source
        failure.line = at.currentline
    end
    return failure
end

-- The version kvstore claims (commands::REDIS_VERSION, 7.0.15), as text
-- and as 0x00MMmmpp.
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = '7.0.15', 0x07000f

redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

-- An error reply's text is a code and a message: without a leading '-',
-- and with 'ERR ' before a text of one word (no code), as Redis 7.0 does.
redis.error_reply = function(text)
    if type(text) ~= 'string' then
        return { err = 'ERR wrong number or type of arguments' }
    end
    if string.sub(text, 1, 1) == '-' then
        text = string.sub(text, 2)
    end
    if string.find(text, ' ', 1, true) == nil then
        text = 'ERR ' .. text
    end
    return { err = text }
end

redis.status_reply = function(text)
    if type(text) ~= 'string' then
        return { err = 'ERR wrong number or type of arguments' }
    end
    return { ok = text }
end

cjson._NAME, cjson._VERSION = 'cjson', '2.1.0'
cmsgpack._NAME, cmsgpack._VERSION = 'cmsgpack', 'lua-cmsgpack 0.4.0'

-- Scripts load Lua text only: Lua 5.1 runs a precompiled chunk without
-- checking its bytes, so one starting with the binary mark (ESC) gets the
-- error a text parser gives it, as in Redis, whose Lua reads every chunk
-- as text.
local BINARY_MARK = string.char(27)
local function refused(name)
    local shown = '[string "?"]'
    if type(name) == 'string' then
        shown = string.gsub(name, '^[=@]', '')
    end
    return nil, shown .. ":1: unexpected symbol near '<\\27>'"
end
local load_text, load_pieces = loadstring, load
loadstring = function(code, name)
    if type(code) == 'string' and string.sub(code, 1, 1) == BINARY_MARK then
        return refused(name)
    end
    return load_text(code, name)
end
load = function(reader, name)
    local first, binary = true, false
    local function checked()
        if binary then
            return nil
        end
        local piece = reader()
        if first and type(piece) == 'string' and piece ~= '' then
            first = false
            -- Ends the chunk here (not an error: the handler of the
            -- running script would see that); refused below.
            binary = string.sub(piece, 1, 1) == BINARY_MARK
            if binary then
                return nil
            end
        end
        return piece
    end
    local f, msg = load_pieces(checked, name)
    if binary then
        return refused(name or '=(load)')
    end
    return f, msg
end

-- A script that was stopped (killed, or past a time limit) must not go
-- on by catching the error that stops it: after pcall or xpcall catches
-- an error, the stop (if any) is raised again past them.
local stopped = __faultline.stopped
local function pass(ok, ...)
    if not ok then
        local why = stopped()
        if why ~= nil then
            error(why, 0)
        end
    end
    return ok, ...
end
local catch, catch_with = pcall, xpcall
pcall = function(...)
    return pass(catch(...))
end
xpcall = function(...)
    return pass(catch_with(...))
end

local keep = {}
for name in string.gmatch([[
    assert collectgarbage error gcinfo getmetatable ipairs load loadstring
    next pairs pcall rawequal rawget rawset select setmetatable tonumber
    tostring type unpack xpcall _G _VERSION coroutine string table math bit
    cjson cmsgpack struct
    redis __redis__err__handler KEYS ARGV
]], '%S+') do
    keep[name] = true
end
for name in pairs(_G) do
    if not keep[name] then
        _G[name] = nil
    end
end
