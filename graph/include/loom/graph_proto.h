// A graph (loom/graph.h) to and from protobuf bytes (graph/proto/graph.proto), the
// form a compiler or a deployment stores a graph in.
#pragma once

#include <string>
#include <string_view>

#include "loom/graph.h"

namespace loom::graph {

// The version serialize_graph writes; parse_graph reads it and older ones.
inline constexpr int kGraphFormatVersion = 1;

std::string serialize_graph(const Graph& graph);

// Reads bytes serialize_graph wrote. Nothing is trusted: the message, the format
// version, each id, dtype and device, then the whole graph (Graph::validate). Errors
// are loom::Error "[graph proto] <source>: ...".
Graph parse_graph(std::string_view bytes, std::string_view source = "graph");

void save_graph(const Graph& graph, const std::string& path);
Graph load_graph(const std::string& path);

}  // namespace loom::graph
