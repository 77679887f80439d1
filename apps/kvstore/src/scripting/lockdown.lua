-- Makes what scripts share read-only, after sandbox.lua (see sandbox.rs):
-- one script must not change what the next one finds. The globals move to
-- a table behind _G, which stays empty but for KEYS and ARGV; each library
-- table is replaced by an empty one that reads through to it. Writing to
-- any of them (a new global too) is an error, rawset included; reading a
-- missing global is an error, as in Redis 7.0.

local G, rawset, setmetatable, getmetatable, pairs, next, type, error, tostring =
    _G, rawset, setmetatable, getmetatable, pairs, next, type, error, tostring

local function refuse()
    error('Attempt to modify a readonly table', 2)
end

-- Each read-only view, and the table it reads through to.
local readonly = setmetatable({}, { __mode = 'k' })

-- What getmetatable gives for a protected table: an empty read-only
-- table (the real metatable would lead to the real tables).
local function opaque()
    local t = setmetatable({}, { __newindex = refuse, __metatable = false })
    readonly[t] = {}
    return t
end

local function protect(real)
    local view = setmetatable({}, { __index = real, __newindex = refuse, __metatable = opaque() })
    readonly[view] = real
    return view
end

local globals = {}
for name, value in pairs(G) do
    if type(value) == 'table' and name ~= '_G' then
        value = protect(value)
    end
    globals[name] = value
end
for name in pairs(globals) do
    rawset(G, name, nil)
end
globals._G = G

globals.rawset = function(t, k, v)
    if readonly[t] then
        refuse()
    end
    return rawset(t, k, v)
end
globals.setmetatable = function(t, m)
    if readonly[t] then
        refuse()
    end
    return setmetatable(t, m)
end

-- pairs and next over a view walk what it reads through to, without
-- handing that table out.
globals.pairs = function(t)
    local real = readonly[t]
    if real == nil then
        return pairs(t)
    end
    local key
    return function()
        local value
        key, value = next(real, key)
        return key, value
    end
end
globals.next = function(t, k)
    local real = readonly[t]
    if real == nil then
        return next(t, k)
    end
    return next(real, k)
end

setmetatable(globals, {
    __index = function(_, name)
        error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end,
})
readonly[G] = globals
setmetatable(G, { __index = globals, __newindex = refuse, __metatable = opaque() })

-- Strings' metatable is shared by every string: their methods come from
-- the string library's view, and scripts cannot reach the metatable.
local string_meta = getmetatable('')
string_meta.__index = globals.string
string_meta.__metatable = opaque()
