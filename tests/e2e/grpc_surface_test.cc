// What generic gRPC tooling sees: the standard health service reports
// SERVING, and server reflection lists and describes understudy's services.
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/e2e/e2e_test_base.h"

namespace understudy {
namespace e2e {
namespace {

using ::grpc::reflection::v1alpha::ServerReflection;
using ::grpc::reflection::v1alpha::ServerReflectionRequest;
using ::grpc::reflection::v1alpha::ServerReflectionResponse;
using ::testing::IsSupersetOf;

// Sends each request on one ServerReflectionInfo stream and returns the
// responses in order.
absl::StatusOr<std::vector<ServerReflectionResponse>> Reflect(
    const std::shared_ptr<grpc::Channel>& channel,
    const std::vector<ServerReflectionRequest>& requests) {
  auto stub = ServerReflection::NewStub(channel);
  auto context = CallContext();
  auto stream = stub->ServerReflectionInfo(context.get());
  std::vector<ServerReflectionResponse> responses;
  for (const ServerReflectionRequest& request : requests) {
    ServerReflectionResponse response;
    if (!stream->Write(request) || !stream->Read(&response)) break;
    responses.push_back(std::move(response));
  }
  stream->WritesDone();
  grpc::Status s = stream->Finish();
  if (!s.ok()) return FromGrpc(s);
  if (responses.size() != requests.size()) {
    return absl::DataLossError("reflection stream ended early");
  }
  return responses;
}

class GrpcSurfaceTest : public E2eTest {};

TEST_F(GrpcSurfaceTest, HealthCheckReportsServing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  EXPECT_THAT(HealthCheck(server->NewChannel()), IsOkAndHolds(1));
  EXPECT_THAT(HealthCheck(server->NewChannel(), "no.such.Service"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(GrpcSurfaceTest, ReflectionListsAndDescribesTheUnderstudyServices) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  ServerReflectionRequest list;
  list.set_list_services("");
  ServerReflectionRequest model;
  model.set_file_containing_symbol("understudy.v1.Model");
  ASSERT_OK_AND_ASSIGN(std::vector<ServerReflectionResponse> responses,
                       Reflect(server->NewChannel(), {list, model}));

  ASSERT_TRUE(responses[0].has_list_services_response()) << responses[0].DebugString();
  std::vector<std::string> names;
  for (const auto& service : responses[0].list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names,
              IsSupersetOf({"understudy.v1.Model", "understudy.v1.Runs", "understudy.v1.Recorder",
                            "understudy.v1.Sessions", "understudy.v1.Traces",
                            "grpc.reflection.v1alpha.ServerReflection"}));

  // The descriptors are complete enough for a generic client to call Model.
  ASSERT_TRUE(responses[1].has_file_descriptor_response()) << responses[1].DebugString();
  google::protobuf::DescriptorPool pool;
  std::vector<google::protobuf::FileDescriptorProto> files;
  for (const std::string& bytes : responses[1].file_descriptor_response().file_descriptor_proto()) {
    ASSERT_TRUE(files.emplace_back().ParseFromString(bytes));
  }
  // Dependencies first, whatever order they came in (bounded: each pass
  // builds at least one file or stops).
  std::set<std::string> built;
  for (size_t pass = 0; pass < files.size() && built.size() < files.size(); ++pass) {
    for (const auto& file : files) {
      if (built.count(file.name()) != 0) continue;
      bool ready = true;
      for (const std::string& dep : file.dependency()) ready = ready && built.count(dep) != 0;
      if (ready && pool.BuildFile(file) != nullptr) built.insert(file.name());
    }
  }
  const google::protobuf::ServiceDescriptor* service =
      pool.FindServiceByName("understudy.v1.Model");
  ASSERT_NE(service, nullptr) << "files: " << built.size() << " of " << files.size();
  const google::protobuf::MethodDescriptor* stream = service->FindMethodByName("StreamComplete");
  ASSERT_NE(stream, nullptr);
  EXPECT_TRUE(stream->server_streaming());
  EXPECT_EQ(stream->output_type()->full_name(), "understudy.v1.CompletionChunk");
  const google::protobuf::MethodDescriptor* unary = service->FindMethodByName("Complete");
  ASSERT_NE(unary, nullptr);
  EXPECT_FALSE(unary->server_streaming());
  EXPECT_EQ(unary->input_type()->full_name(), "understudy.v1.CompletionRequest");
}

TEST_F(GrpcSurfaceTest, HealthAnswersForEachServedServiceByName) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  for (const char* service :
       {"understudy.v1.Model", "understudy.v1.Runs", "understudy.v1.Recorder",
        "understudy.v1.Sessions", "understudy.v1.Traces", "understudy.v1.Tools",
        "understudy.v1.Ui"}) {
    EXPECT_THAT(HealthCheck(server->NewChannel(), service), IsOkAndHolds(1)) << service;
  }
}

TEST_F(GrpcSurfaceTest, ReflectionDescribesTheHealthService) {
  // What grpcurl and grpcui ask before calling grpc.health.v1.Health/Check.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  ServerReflectionRequest list;
  list.set_list_services("");
  ServerReflectionRequest health;
  health.set_file_containing_symbol("grpc.health.v1.Health");
  ASSERT_OK_AND_ASSIGN(std::vector<ServerReflectionResponse> responses,
                       Reflect(server->NewChannel(), {list, health}));
  std::vector<std::string> names;
  for (const auto& service : responses[0].list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, ::testing::Contains("grpc.health.v1.Health"));
  ASSERT_TRUE(responses[1].has_file_descriptor_response()) << responses[1].DebugString();
  google::protobuf::FileDescriptorProto file;
  ASSERT_TRUE(file.ParseFromString(responses[1].file_descriptor_response().file_descriptor_proto(0)));
  google::protobuf::DescriptorPool pool;
  ASSERT_NE(pool.BuildFile(file), nullptr);
  const google::protobuf::ServiceDescriptor* service = pool.FindServiceByName("grpc.health.v1.Health");
  ASSERT_NE(service, nullptr);
  ASSERT_NE(service->FindMethodByName("Check"), nullptr);
  EXPECT_EQ(service->FindMethodByName("Check")->input_type()->full_name(),
            "grpc.health.v1.HealthCheckRequest");
}

// Agents keep their channels open; shutdown must not wait for them to go.
TEST_F(GrpcSurfaceTest, SigtermWithAnIdleClientConnectionExitsPromptly) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server, StartServer());
  Clients c(server->NewChannel());
  ASSERT_THAT(ExportSession(c, "none"), StatusIs(absl::StatusCode::kNotFound));
  const absl::Time start = absl::Now();
  EXPECT_THAT(server->Terminate(), IsOkAndHolds(0));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2)) << server->Stderr();
}

}  // namespace
}  // namespace e2e
}  // namespace understudy
