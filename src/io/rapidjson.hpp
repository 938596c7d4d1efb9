// rapidjson, as cereal configures it. cereal's JSON archives bring rapidjson
// in with its assertions turned into exceptions; every translation unit that
// parses or writes JSON directly must see rapidjson configured the same way
// (one definition rule), so it includes rapidjson only through this header.
// Namespace alias: autohaap::rj.
//
// Parse flags, for every reader including cereal's archive (which parses
// with the defaults): iterative, so no nesting can exhaust the stack; full
// precision, so a number written reads back as exactly the double written;
// NaN and Infinity, as cereal writes them. Full precision is safe only on
// numbers in the form rapidjson's writer gives them: user text reaches a
// parser only through io/json_input.hpp, which puts every number so.
#pragma once

#if defined(RAPIDJSON_PARSE_DEFAULT_FLAGS) || defined(CEREAL_RAPIDJSON_PARSE_DEFAULT_FLAGS)
#error "rapidjson was configured before io/rapidjson.hpp: include it first, and rapidjson only through it"
#endif
#define RAPIDJSON_PARSE_DEFAULT_FLAGS kParseIterativeFlag | kParseFullPrecisionFlag | kParseNanAndInfFlag
#define CEREAL_RAPIDJSON_PARSE_DEFAULT_FLAGS kParseIterativeFlag | kParseFullPrecisionFlag | kParseNanAndInfFlag

#include <cereal/archives/json.hpp>
#ifdef CEREAL_RAPIDJSON_NAMESPACE
#include <cereal/external/rapidjson/encodedstream.h>
#include <cereal/external/rapidjson/error/en.h>
#include <cereal/external/rapidjson/memorystream.h>
#include <cereal/external/rapidjson/prettywriter.h>
#include <cereal/external/rapidjson/stringbuffer.h>
#include <cereal/external/rapidjson/writer.h>
namespace autohaap {
namespace rj = CEREAL_RAPIDJSON_NAMESPACE;
}
#else
#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
namespace autohaap {
namespace rj = RAPIDJSON_NAMESPACE;
}
#endif
