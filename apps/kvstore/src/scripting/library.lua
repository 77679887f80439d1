-- Function libraries (FUNCTION LOAD, FCALL), run once in the functions'
-- Lua state before sandbox.lua (which takes setfenv away) and lockdown.lua
-- (see functions.rs). It defines four globals that Rust keeps in the registry and removes:
--
--   __redis__load(code)          runs a library's code, whose only global
--                                is a `redis` table with register_function
--                                and log; stages what it registered and
--                                returns {name, description or false,
--                                'flag,flag', ...}, or raises the error
--   __redis__commit(lib)         makes the staged functions library `lib`'s
--   __redis__drop(lib)           forgets library `lib`
--   __redis__fcall(lib, name, keys, args)
--                                calls function `name` of library `lib`

local G, setfenv, setmetatable, loadstring, pcall, error, type, select, pairs, tostring =
    _G, setfenv, setmetatable, loadstring, pcall, error, type, select, pairs, tostring
local lower, find, sub, concat = string.lower, string.find, string.sub, table.concat
local real_redis = redis

-- Each library's functions, by name.
local libraries = {}
-- What the library being loaded registered: {names, by_name}.
local staged = nil

local FLAGS = {
    ['no-writes'] = true,
    ['allow-oom'] = true,
    ['allow-stale'] = true,
    ['no-cluster'] = true,
    ['allow-cross-slot-keys'] = true,
}

local function fail(text)
    error({ err = 'ERR ' .. text }, 0)
end

local function readonly()
    error('Attempt to modify a readonly table', 2)
end

local function missing(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end

local function valid_name(name)
    return name ~= '' and not find(name, '[^%w_]')
end

local function read_flags(flags)
    if type(flags) ~= 'table' then
        fail('flags argument to redis.register_function must be a table representing function flags')
    end
    local names = {}
    local i = 1
    while flags[i] ~= nil do
        local flag = flags[i]
        if type(flag) ~= 'string' or not FLAGS[flag] then
            fail('unknown flag given')
        end
        names[#names + 1] = flag
        i = i + 1
    end
    return concat(names, ',')
end

local function register_function(...)
    if staged == nil then
        fail('redis.register_function can only be called on FUNCTION LOAD command')
    end
    local n = select('#', ...)
    if n < 1 or n > 2 then
        fail('wrong number of arguments to redis.register_function')
    end
    local name, callback, description, flags = nil, nil, false, ''
    if n == 1 then
        local named = ...
        if type(named) ~= 'table' then
            fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
        end
        for key, value in pairs(named) do
            if type(key) ~= 'string' then
                fail('named argument key given to redis.register_function is not a string')
            end
            key = lower(key)
            if key == 'function_name' then
                if type(value) ~= 'string' then
                    fail('function_name argument given to redis.register_function must be a string')
                end
                name = value
            elseif key == 'description' then
                if type(value) ~= 'string' then
                    fail('description argument given to redis.register_function must be a string')
                end
                description = value
            elseif key == 'callback' then
                if type(value) ~= 'function' then
                    fail('callback argument given to redis.register_function must be a function')
                end
                callback = value
            elseif key == 'flags' then
                flags = read_flags(value)
            else
                fail('unknown argument given to redis.register_function')
            end
        end
        if name == nil then
            fail('redis.register_function must get a function name argument')
        end
        if callback == nil then
            fail('redis.register_function must get a callback argument')
        end
    else
        name, callback = ...
        if type(name) ~= 'string' then
            fail('first argument to redis.register_function must be a string')
        end
        if type(callback) ~= 'function' then
            fail('second argument to redis.register_function must be a function')
        end
    end
    if not valid_name(name) then
        fail('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
    end
    if staged.by_name[lower(name)] then
        fail('Function already exists in the library')
    end
    staged.by_name[lower(name)] = callback
    local list = staged.list
    list[#list + 1] = name
    list[#list + 1] = description
    list[#list + 1] = flags
end

-- The `redis` a library's code sees while it loads: read-only, and
-- reading anything it lacks is an error (the version fields are
-- sandbox.lua's, which runs after this file).
local load_api = setmetatable({
    register_function = register_function,
    log = real_redis.log,
    LOG_DEBUG = 0,
    LOG_VERBOSE = 1,
    LOG_NOTICE = 2,
    LOG_WARNING = 3,
}, {
    __index = function(_, name)
        if name == 'REDIS_VERSION' or name == 'REDIS_VERSION_NUM' then
            return real_redis[name]
        end
        missing(nil, name)
    end,
})
local load_redis = setmetatable({}, {
    __index = load_api,
    __newindex = readonly,
    __metatable = false,
})

-- The globals of every library's code: while it loads, only `redis` (the
-- one above); when its functions run, the globals scripts have.
local loading = false
local library_env = setmetatable({}, {
    __index = function(_, name)
        if loading then
            if name == 'redis' then
                return load_redis
            end
            missing(nil, name)
        end
        return G[name]
    end,
    __newindex = readonly,
    __metatable = false,
})

function __redis__load(code)
    local chunk, message = loadstring(code, '@user_function')
    if chunk == nil then
        error({ err = 'ERR Error compiling function: ' .. tostring(message) }, 0)
    end
    setfenv(chunk, library_env)
    staged = { list = {}, by_name = {} }
    loading = true
    local ok, failure = pcall(chunk)
    loading = false
    local list = staged.list
    if not ok then
        staged = nil
        if type(failure) == 'table' then
            failure = failure.err
            if type(failure) == 'string' and sub(failure, 1, 4) == 'ERR ' then
                failure = sub(failure, 5)
            end
        end
        error({ err = 'ERR Error registering functions: ' .. tostring(failure) }, 0)
    end
    staged.list = nil
    return list
end

function __redis__commit(lib)
    libraries[lib] = staged and staged.by_name
    staged = nil
end

function __redis__drop(lib)
    libraries[lib] = nil
end

function __redis__fcall(lib, name, keys, args)
    return libraries[lib][lower(name)](keys, args)
end
