// rapidjson, as cereal configures it. cereal's JSON archives bring rapidjson
// in with its assertions turned into exceptions; every translation unit that
// parses or writes JSON directly must see rapidjson configured the same way
// (one definition rule), so it includes rapidjson only through this header.
// Namespace alias: autohaap::rj.
#pragma once

#include <cereal/archives/json.hpp>
#ifdef CEREAL_RAPIDJSON_NAMESPACE
#include <cereal/external/rapidjson/error/en.h>
#include <cereal/external/rapidjson/prettywriter.h>
#include <cereal/external/rapidjson/stringbuffer.h>
#include <cereal/external/rapidjson/writer.h>
namespace autohaap {
namespace rj = CEREAL_RAPIDJSON_NAMESPACE;
}
#else
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
namespace autohaap {
namespace rj = RAPIDJSON_NAMESPACE;
}
#endif
