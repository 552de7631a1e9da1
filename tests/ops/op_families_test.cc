// The op family as data (Note [Op families as data]): every standard op has the family of
// the .def file that declares it, every family has its samples file, and every sample
// sits in its op's family.
#include <map>
#include <set>
#include <string>

#include "loom/ops/op_library.h"
#include "loom/ops/samples.h"
#include "loom/ops/structured_schemas.h"
#include "ops_test_util.h"

namespace loom::testing {
namespace {

std::string op_name_of(std::string_view schema) {
  return std::string(schema.substr(0, schema.find('(')));
}

TEST(OpFamilies, EveryOpHasTheFamilyOfItsDefFileAndEveryFamilyHasSamples) {
  std::set<std::string> op_families, sample_families;
  for (const OpDefinition& def : standard_ops()) {
    EXPECT_FALSE(def.family.empty()) << def.schema;
    op_families.insert(std::string(def.family));
    // A family is not a tag (the family column of docs/ops.md says it); "view" is the tag
    // of every view op (Note [View ops]), whichever family declares it.
    if (def.family != "view") {
      EXPECT_FALSE(ops::has_tag(def.tags, def.family)) << def.schema << " tags " << def.tags;
    }
  }
  for (const ops::SampleFamily& f : ops::sample_families()) {
    sample_families.insert(std::string(f.name));
  }
  EXPECT_EQ(op_families, sample_families);
  EXPECT_TRUE(op_families.count("binary") && op_families.count("view"));
  // Spot checks: an op is in the family whose file declares it.
  for (const OpDefinition& def : standard_ops()) {
    const std::string name = op_name_of(def.schema);
    if (name == "loom::add.Tensor") {
      EXPECT_EQ(def.family, "binary");
    } else if (name == "loom::sort") {
      EXPECT_EQ(def.family, "sort");
    } else if (name == "loom::uniform_") {
      EXPECT_EQ(def.family, "random");
    }
  }
}

TEST(OpFamilies, EverySampleIsInItsOpsFamily) {
  std::map<std::string, std::string> family_of;
  for (const OpDefinition& def : standard_ops()) {
    family_of[op_name_of(def.schema)] = std::string(def.family);
  }
  for (const ops::SampleFamily& f : ops::sample_families()) {
    for (const ops::OpSample& s : f.samples) {
      auto it = family_of.find(s.op);
      if (it == family_of.end()) continue;  // a derived variant (add_.Tensor, add.out)
      EXPECT_EQ(it->second, f.name)
          << s.op << " has a sample in ops/samples/" << f.name
          << ".cc but is declared in ops/schemas/" << it->second << ".def";
    }
  }
}

}  // namespace
}  // namespace loom::testing
